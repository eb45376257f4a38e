// The expansion depends on ALPINIST_VERIFY (verification on or off): rebuild when it changes,
// else cargo would keep expansions made under the other setting.
fn main() {
    println!("cargo:rerun-if-env-changed=ALPINIST_VERIFY");
}
