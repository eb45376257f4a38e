fn main() -> std::process::ExitCode {
    alpinist_cli::main()
}
