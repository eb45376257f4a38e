//! Barrier-interval fission: a par block with barriers as sequential Rust, the way the
//! interpreter (`interp/par.rs`) and pocl's work-group functions run it.
//!
//! Every thread runs up to the barrier, then every thread runs on:
//! - the statements between two barriers become one `for tid in threads { .. }`;
//! - a `while`, `if`, sequential `for` or block that holds a barrier is hoisted out of the
//!   thread loops, its condition (or range) evaluated once, as thread `lo` sees it — the checker
//!   proved every barrier uniform (`verify/uniformity.rs`: all threads take the same path), so
//!   every thread would see the same;
//! - a local declared at a level that holds a barrier lives across thread loops: it becomes a
//!   `Vec` with one cell per thread, and its uses `x[tid - lo]`.
//!
//! The input is the par loop after `cpu.rs` took the helpers out and wrote out every local's
//! type (which the vectors need).

use std::collections::BTreeMap;

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::visit_mut::VisitMut;

/// `for tid in range { body-with-barriers }` as fissioned Rust.
pub(super) fn fission(f: &syn::ExprForLoop) -> Result<syn::Expr, syn::Error> {
    let syn::Pat::Ident(tid) = &*f.pat else {
        return Err(syn::Error::new_spanned(
            &f.pat,
            "a par block binds one thread variable",
        ));
    };
    let mut cx = Fission {
        tid: tid.ident.clone(),
        private: BTreeMap::new(),
    };
    cx.collect_private(&f.body.stmts)?;
    let range = &f.expr;
    let decls: Vec<TokenStream> = cx
        .private
        .iter()
        .map(|(name, ty)| {
            let name = Ident::new(name, proc_macro2::Span::call_site());
            quote!(let mut #name: ::std::vec::Vec<#ty> =
                ::std::vec![::core::default::Default::default(); __alpinist_threads.len()];)
        })
        .collect();
    let body = cx.block(&f.body.stmts)?;
    Ok(syn::parse_quote!({
        let __alpinist_threads: ::core::ops::Range<usize> = #range;
        if !__alpinist_threads.is_empty() {
            #(#decls)*
            #(#body)*
        }
    }))
}

struct Fission {
    tid: Ident,
    /// Locals that live across barriers, with their types.
    private: BTreeMap<String, syn::Type>,
}

/// Whether a statement (or anything) holds a `barrier()` call.
pub(super) fn has_barrier(tokens: TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(k, t)| match t {
        TokenTree::Ident(i) if i == "barrier" => matches!(
            trees.get(k + 1),
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis
        ),
        TokenTree::Group(g) => has_barrier(g.stream()),
        _ => false,
    })
}

fn is_barrier_stmt(s: &syn::Stmt) -> bool {
    matches!(s, syn::Stmt::Expr(syn::Expr::Call(c), _)
        if c.args.is_empty() && matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("barrier")))
}

impl Fission {
    /// The `let`s of every level that holds a barrier.
    fn collect_private(&mut self, stmts: &[syn::Stmt]) -> Result<(), syn::Error> {
        for s in stmts {
            match s {
                syn::Stmt::Local(local) => {
                    let syn::Pat::Type(pt) = &local.pat else {
                        return Err(syn::Error::new_spanned(
                            &local.pat,
                            "a local of a par block with a barrier needs its type",
                        ));
                    };
                    let syn::Pat::Ident(name) = &*pt.pat else {
                        return Err(syn::Error::new_spanned(&pt.pat, "one name per `let`"));
                    };
                    self.private
                        .insert(name.ident.to_string(), (*pt.ty).clone());
                }
                syn::Stmt::Expr(e, _) if has_barrier(e.to_token_stream()) => match e {
                    syn::Expr::While(w) => self.collect_private(&w.body.stmts)?,
                    syn::Expr::ForLoop(l) => self.collect_private(&l.body.stmts)?,
                    syn::Expr::Block(b) => self.collect_private(&b.block.stmts)?,
                    syn::Expr::If(i) => self.collect_private_if(i)?,
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(())
    }

    fn collect_private_if(&mut self, i: &syn::ExprIf) -> Result<(), syn::Error> {
        self.collect_private(&i.then_branch.stmts)?;
        match i.else_branch.as_ref().map(|(_, e)| &**e) {
            Some(syn::Expr::Block(b)) => self.collect_private(&b.block.stmts),
            Some(syn::Expr::If(i)) => self.collect_private_if(i),
            _ => Ok(()),
        }
    }

    /// The statements of a level that holds a barrier.
    fn block(&self, stmts: &[syn::Stmt]) -> Result<Vec<TokenStream>, syn::Error> {
        let tid = &self.tid;
        let mut out = Vec::new();
        let mut segment: Vec<TokenStream> = Vec::new();
        let flush = |segment: &mut Vec<TokenStream>, out: &mut Vec<TokenStream>| {
            if !segment.is_empty() {
                let body = std::mem::take(segment);
                out.push(quote!(for #tid in __alpinist_threads.clone() { #(#body)* }));
            }
        };
        for s in stmts {
            if !has_barrier(s.to_token_stream()) {
                if let Some(s) = self.thread_stmt(s) {
                    segment.push(s);
                }
                continue;
            }
            flush(&mut segment, &mut out);
            if is_barrier_stmt(s) {
                continue;
            }
            let syn::Stmt::Expr(e, _) = s else {
                return Err(syn::Error::new_spanned(
                    s,
                    "a barrier inside this statement",
                ));
            };
            out.push(self.hoisted(e)?);
        }
        flush(&mut segment, &mut out);
        Ok(out)
    }

    /// A statement holding a barrier, run once for all threads.
    fn hoisted(&self, e: &syn::Expr) -> Result<TokenStream, syn::Error> {
        Ok(match e {
            syn::Expr::While(w) => {
                let cond = self.uniform(&w.cond);
                let body = self.block(&w.body.stmts)?;
                quote!(while #cond { #(#body)* })
            }
            syn::Expr::ForLoop(l) => {
                let pat = &l.pat;
                let range = self.uniform(&l.expr);
                let body = self.block(&l.body.stmts)?;
                quote!(for #pat in #range { #(#body)* })
            }
            syn::Expr::Block(b) => {
                let body = self.block(&b.block.stmts)?;
                quote!({ #(#body)* })
            }
            syn::Expr::If(i) => self.hoisted_if(i)?,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "a barrier inside this statement has no CPU form",
                ))
            }
        })
    }

    fn hoisted_if(&self, i: &syn::ExprIf) -> Result<TokenStream, syn::Error> {
        let cond = self.uniform(&i.cond);
        let then = self.block(&i.then_branch.stmts)?;
        let otherwise = match i.else_branch.as_ref().map(|(_, e)| &**e) {
            None => quote!(),
            Some(syn::Expr::Block(b)) => {
                let body = self.block(&b.block.stmts)?;
                quote!(else { #(#body)* })
            }
            Some(syn::Expr::If(inner)) => {
                let inner = self.hoisted_if(inner)?;
                quote!(else #inner)
            }
            Some(other) => return Err(syn::Error::new_spanned(other, "an unexpected `else`")),
        };
        Ok(quote!(if #cond { #(#then)* } #otherwise))
    }

    /// An expression every thread evaluates alike, evaluated as the first thread does.
    fn uniform(&self, e: &syn::Expr) -> TokenStream {
        let tid = &self.tid;
        let e = self.rewritten(e.to_token_stream());
        quote!({
            #[allow(unused_variables)]
            let #tid: usize = __alpinist_threads.start;
            #e
        })
    }

    /// A statement of one thread: a private `let` assigns the thread's cell.
    fn thread_stmt(&self, s: &syn::Stmt) -> Option<TokenStream> {
        if let syn::Stmt::Local(local) = s {
            if let syn::Pat::Type(pt) = &local.pat {
                if let syn::Pat::Ident(name) = &*pt.pat {
                    if self.private.contains_key(&name.ident.to_string()) {
                        let init = &local.init.as_ref()?.expr;
                        let cell = self.cell(&name.ident);
                        let value = self.rewritten(init.to_token_stream());
                        return Some(quote!(#cell = #value;));
                    }
                }
            }
        }
        let mut s = s.clone();
        Rename { fission: self }.visit_stmt_mut(&mut s);
        Some(s.to_token_stream())
    }

    fn cell(&self, name: &Ident) -> TokenStream {
        let tid = &self.tid;
        quote!(#name[#tid - __alpinist_threads.start])
    }

    /// Private names in tokens (macro arguments, conditions) as the thread's cells.
    fn rewritten(&self, tokens: TokenStream) -> TokenStream {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        for (k, t) in trees.iter().enumerate() {
            match t {
                TokenTree::Ident(i)
                    if self.private.contains_key(&i.to_string())
                        && !matches!(trees.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!')
                        && !(k > 0
                            && matches!(&trees[k - 1], TokenTree::Punct(p) if p.as_char() == '.')) =>
                {
                    out.extend(self.cell(i))
                }
                TokenTree::Group(g) => {
                    let mut inner = Group::new(g.delimiter(), self.rewritten(g.stream()));
                    inner.set_span(g.span());
                    out.extend([TokenTree::Group(inner)]);
                }
                other => out.extend([other.clone()]),
            }
        }
        out
    }
}

/// Rewrites the uses of private locals in one thread's statement.
struct Rename<'f> {
    fission: &'f Fission,
}

impl VisitMut for Rename<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if let Some(id) = p.path.get_ident() {
                if self.fission.private.contains_key(&id.to_string()) {
                    *e = syn::parse2(self.fission.cell(id)).expect("an index expression");
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.fission.rewritten(m.tokens.clone());
    }
}
