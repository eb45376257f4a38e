//! Par blocks: launching threads, stepping them between barriers, and race detection.
//!
//! # Scheduling
//! A block's threads are created from the cartesian product of its iterator ranges, and run
//! in the order of [`super::Limits::order`] (ascending by default). If its
//! body holds no barrier of its own, each thread runs to its end in turn. Otherwise each thread
//! keeps a continuation (a stack of [`Frame`]s over the statements that contain a barrier;
//! statements without one run in one go) and the block proceeds in rounds: every thread runs
//! to its next barrier or its end, then all are released. All threads must stop at the same
//! barrier statement in a round, or all finish; anything else is a divergent barrier.
//!
//! # Race detection
//! Each par level (a block's threads; blocks launched together; nested blocks inside a
//! thread) keeps a log per barrier interval: for each array cell touched, the first writer and
//! up to two distinct readers, with thread index and span. An access that conflicts with the
//! log (another thread wrote it, or this is a write and another thread read it) is a race,
//! reported at once. At the end of an interval the log is cleared; if the level is nested in
//! another, its accesses are first replayed into the enclosing log as accesses of the
//! enclosing thread (from outside, a nested launch is part of that thread's work).

use std::collections::BTreeMap;

use crate::syntax::{Contract, Expr, ParBlock, ParGroup, ParGroupStyle, Span, Stmt, StmtKind};

use super::exec::{Env, Flow};
use super::{Access, ArrayRef, InterpError, Machine, Value};

/// One par level's race log.
pub(crate) struct Level {
    who: Who,
    /// The thread (or block) now running, an index into `who`.
    current: usize,
    log: BTreeMap<(usize, usize), CellLog>,
}

/// How to name the threads of a level in reports.
enum Who {
    /// A block's threads: iterator names with their ranges (lo, size), row-major.
    Threads {
        label: String,
        iters: Vec<(String, i128, u64)>,
    },
    /// Blocks launched together.
    Blocks(Vec<String>),
}

impl Level {
    fn describe(&self, k: usize) -> String {
        match &self.who {
            Who::Blocks(names) => names.get(k).cloned().unwrap_or_default(),
            Who::Threads { label, iters } => {
                let mut rest = k as u64;
                let mut parts = Vec::with_capacity(iters.len());
                for (name, lo, size) in iters.iter().rev() {
                    let size = (*size).max(1);
                    parts.push(format!("{name} = {}", lo + (rest % size) as i128));
                    rest /= size;
                }
                parts.reverse();
                format!("thread {label}({})", parts.join(", "))
            }
        }
    }
}

#[derive(Default)]
struct CellLog {
    writer: Option<(usize, Span)>,
    readers: [Option<(usize, Span)>; 2],
}

/// Where a thread stopped.
enum Stop<'p> {
    Barrier(&'p Stmt),
    Finished,
}

/// A thread's continuation: statements containing a barrier, entered but not finished.
enum Frame<'p> {
    /// The rest of a statement list; `scoped`: leaving it closes a scope.
    Stmts {
        stmts: &'p [Stmt],
        pc: usize,
        scoped: bool,
    },
    /// A `while`/`for` loop; `started` once the body ran (the update comes before the next
    /// test); `scoped`: a `for`, whose init declared variables in a scope of its own.
    Loop {
        cond: Option<&'p Expr>,
        body: &'p Stmt,
        update: Option<&'p Stmt>,
        started: bool,
        scoped: bool,
        /// Its invariants, checked with `Limits::check_specs`.
        contract: &'p Contract,
    },
}

struct Thread<'p> {
    env: Env<'p>,
    frames: Vec<Frame<'p>>,
}

impl<'p> Machine<'p, '_> {
    /// Records an access for race detection (nothing outside par blocks).
    pub(crate) fn record(
        &mut self,
        r: ArrayRef,
        i: usize,
        access: Access,
        span: Span,
    ) -> Result<(), InterpError> {
        match self.levels.len() {
            0 => Ok(()),
            n => record_at(&mut self.levels[n - 1], r.0, i, access, span),
        }
    }

    /// ` in thread L(t = 3)` when inside a par block, else empty.
    pub(crate) fn thread_suffix(&self) -> String {
        match self.levels.last() {
            Some(level) => format!(" in {}", level.describe(level.current)),
            None => String::new(),
        }
    }

    pub(crate) fn run_group(
        &mut self,
        env: &mut Env<'p>,
        group: &'p ParGroup,
    ) -> Result<(), InterpError> {
        if group.style == ParGroupStyle::Vector {
            // Its lanes' permissions are the contract the checker infers; without one the
            // interpreter has none to give them (and no lock-step execution).
            if let Some(block) = group.blocks.iter().find(|b| b.contract.clauses.is_empty()) {
                return Err(InterpError::unsupported(
                    "a vector block without a contract",
                    block.span,
                ));
            }
        }
        if self.launcher.is_some() && self.levels.is_empty() && !env.in_thread {
            // Host code of a device run: each block is one launch, one after another (blocks
            // launched together are race-free with each other in a verified program).
            for block in &group.blocks {
                self.launch(env, block)?;
            }
            return Ok(());
        }
        if group.style == ParGroupStyle::Sequential || group.blocks.len() == 1 {
            for block in &group.blocks {
                self.run_block(env, block)?;
            }
            return Ok(());
        }
        let names = group
            .blocks
            .iter()
            .map(|b| match &b.label {
                Some(l) => format!("par block {}", l.name),
                None => "an unnamed par block".to_string(),
            })
            .collect();
        self.levels.push(Level {
            who: Who::Blocks(names),
            current: 0,
            log: BTreeMap::new(),
        });
        let mut result = Ok(());
        for b in self.order(group.blocks.len() as u64) {
            let b = b as usize;
            let block = &group.blocks[b];
            if let Some(level) = self.levels.last_mut() {
                level.current = b;
            }
            result = self.run_block(env, block);
            if result.is_err() {
                break;
            }
        }
        let merged = self.end_interval();
        self.levels.pop();
        result.and(merged)
    }

    /// Hands `block` to the launcher (which must be set) in the launching scope.
    fn launch(&mut self, env: &mut Env<'p>, block: &'p ParBlock) -> Result<(), InterpError> {
        let Some(launcher) = self.launcher.take() else {
            return Err(InterpError::unsupported("no launcher", block.span));
        };
        let mut scope = Scope { machine: self, env };
        let result = launcher.launch(block, &mut scope);
        self.launcher = Some(launcher);
        // The block's head (its name, else its first iterator), not its whole body.
        let head = block
            .label
            .as_ref()
            .map(|l| l.span)
            .or_else(|| block.iters.first().map(|i| i.span))
            .unwrap_or(block.span);
        result.map_err(|message| InterpError::Launch {
            message,
            span: head,
        })
    }

    /// Replays the innermost level's log into the enclosing level (if any), then clears it.
    fn end_interval(&mut self) -> Result<(), InterpError> {
        let n = self.levels.len();
        if n == 0 {
            return Ok(());
        }
        let log = std::mem::take(&mut self.levels[n - 1].log);
        if n == 1 {
            return Ok(());
        }
        let parent = &mut self.levels[n - 2];
        for ((r, i), cell) in log {
            if let Some((_, span)) = cell.writer {
                record_at(parent, r, i, Access::Write, span)?;
            }
            for (_, span) in cell.readers.iter().flatten() {
                record_at(parent, r, i, Access::Read, *span)?;
            }
        }
        Ok(())
    }

    fn run_block(&mut self, env: &mut Env<'p>, block: &'p ParBlock) -> Result<(), InterpError> {
        let mut iters = Vec::with_capacity(block.iters.len());
        let mut count: u64 = 1;
        for it in &block.iters {
            let lo = self.eval_int(env, &it.lo)?;
            let hi = self.eval_int(env, &it.hi)?;
            let size = u64::try_from(hi.saturating_sub(lo).max(0)).unwrap_or(u64::MAX);
            count = count.saturating_mul(size);
            iters.push((it.name.name.clone(), lo, size));
        }
        if count > self.limits.max_threads {
            return Err(InterpError::ResourceLimit {
                what: "threads",
                limit: self.limits.max_threads,
                span: block.span,
            });
        }
        let label = block.label.as_ref().map_or("par", |l| l.name.as_str());
        self.levels.push(Level {
            who: Who::Threads {
                label: label.to_string(),
                iters: iters.clone(),
            },
            current: 0,
            log: BTreeMap::new(),
        });
        let result = if block.body.stmts.iter().any(|s| self.has_barrier(s)) {
            self.run_rounds(env, block, &iters, count)
        } else {
            self.run_straight(env, block, &iters, count)
        };
        let merged = self.end_interval();
        self.levels.pop();
        result.and(merged)
    }

    /// A thread's environment: the launching code's variables plus its iterator values.
    fn thread_env(
        &self,
        env: &Env<'p>,
        block: &'p ParBlock,
        iters: &[(String, i128, u64)],
        k: u64,
    ) -> Env<'p> {
        let mut t = env.clone();
        t.in_thread = true;
        t.push_scope();
        let mut rest = k;
        let mut values = vec![0i128; iters.len()];
        for (j, (_, lo, size)) in iters.iter().enumerate().rev() {
            let size = (*size).max(1);
            values[j] = lo + (rest % size) as i128;
            rest /= size;
        }
        for (it, v) in block.iters.iter().zip(values) {
            t.declare(&it.name.name, Some(super::Value::Int(v)));
        }
        t
    }

    /// Thread (or block) indices `0..n` in the order of [`super::Limits::order`].
    fn order(&self, n: u64) -> Box<dyn Iterator<Item = u64>> {
        match self.limits.order {
            super::Order::Ascending => Box::new(0..n),
            super::Order::Descending => Box::new((0..n).rev()),
        }
    }

    fn set_current(&mut self, k: usize) {
        if let Some(level) = self.levels.last_mut() {
            level.current = k;
        }
    }

    fn run_straight(
        &mut self,
        env: &mut Env<'p>,
        block: &'p ParBlock,
        iters: &[(String, i128, u64)],
        count: u64,
    ) -> Result<(), InterpError> {
        let mut returned = Vec::new();
        // With `check_specs`, every thread's precondition is checked in the state the block
        // is launched in, before any thread runs.
        let mut started = Vec::new();
        if self.limits.check_specs {
            for k in self.order(count) {
                self.set_current(k as usize);
                let mut t = self.thread_env(env, block, iters, k);
                self.start_thread(env, block, &mut t)?;
                started.push(t);
            }
        }
        let mut started = started.into_iter();
        for k in self.order(count) {
            self.set_current(k as usize);
            let mut t = match started.next() {
                Some(t) => t,
                None => self.thread_env(env, block, iters, k),
            };
            if let Flow::Return(_) = self.exec_block(&mut t, &block.body)? {
                return Err(return_in_par(block.span));
            }
            self.finish_thread(block, &mut t, &mut returned)?;
        }
        self.join(env, &returned, block.span)
    }

    fn run_rounds(
        &mut self,
        env: &mut Env<'p>,
        block: &'p ParBlock,
        iters: &[(String, i128, u64)],
        count: u64,
    ) -> Result<(), InterpError> {
        let label = block.label.as_ref().map_or("", |l| l.name.as_str());
        let mut threads: Vec<Thread<'p>> = (0..count)
            .map(|k| {
                let mut env = self.thread_env(env, block, iters, k);
                env.push_scope();
                Thread {
                    env,
                    frames: vec![Frame::Stmts {
                        stmts: &block.body.stmts,
                        pc: 0,
                        scoped: true,
                    }],
                }
            })
            .collect();
        for k in self.order(threads.len() as u64) {
            self.set_current(k as usize);
            self.start_thread(env, block, &mut threads[k as usize].env)?;
        }
        let mut done = vec![false; threads.len()];
        let mut returned = Vec::new();
        loop {
            let mut pool = super::specs::Ledger::new();
            let mut waiting: Option<(usize, &'p Stmt)> = None;
            let mut finished: Option<usize> = None;
            for k in self.order(threads.len() as u64) {
                let k = k as usize;
                let thread = &mut threads[k];
                self.set_current(k);
                match self.advance(thread, label, block.span)? {
                    Stop::Barrier(stmt) => {
                        if let StmtKind::Barrier(b) = &stmt.kind {
                            self.arrive(b, stmt.span, &mut thread.env, &mut pool)?;
                        }
                        if let Some(f) = finished {
                            return Err(self.divergent(
                                stmt,
                                k,
                                format!("{} finished", self.describe(f)),
                            ));
                        }
                        match waiting {
                            None => waiting = Some((k, stmt)),
                            Some((w, first)) if !std::ptr::eq(first, stmt) => {
                                return Err(self.divergent(
                                    first,
                                    w,
                                    format!("{} waits at another barrier", self.describe(k)),
                                ));
                            }
                            Some(_) => {}
                        }
                    }
                    Stop::Finished => {
                        if !done[k] {
                            done[k] = true;
                            self.finish_thread(block, &mut thread.env, &mut returned)?;
                        }
                        if let Some((w, stmt)) = waiting {
                            return Err(self.divergent(
                                stmt,
                                w,
                                format!("{} finished", self.describe(k)),
                            ));
                        }
                        finished.get_or_insert(k);
                    }
                }
            }
            // The barrier ends the interval: its postcondition, checked as each thread leaves,
            // reads the state after it (a cell another thread wrote before it is no race).
            self.end_interval()?;
            let Some((_, stmt)) = waiting else {
                return self.join(env, &returned, block.span);
            };
            if let StmtKind::Barrier(b) = &stmt.kind {
                for k in self.order(threads.len() as u64) {
                    let k = k as usize;
                    self.set_current(k);
                    self.release(b, stmt.span, &mut threads[k].env, &mut pool)?;
                }
            }
        }
    }

    fn describe(&self, k: usize) -> String {
        self.levels
            .last()
            .map(|l| l.describe(k))
            .unwrap_or_default()
    }

    fn divergent(&self, barrier: &'p Stmt, k: usize, other: String) -> InterpError {
        let label = match &barrier.kind {
            StmtKind::Barrier(b) => b.label.name.clone(),
            _ => String::new(),
        };
        InterpError::DivergentBarrier {
            label,
            reached: self.describe(k),
            other,
            span: barrier.span,
        }
    }

    /// Runs a thread up to its next barrier of block `label`, or to its end.
    fn advance(
        &mut self,
        thread: &mut Thread<'p>,
        label: &str,
        block_span: Span,
    ) -> Result<Stop<'p>, InterpError> {
        loop {
            let Some(top) = thread.frames.last_mut() else {
                return Ok(Stop::Finished);
            };
            match top {
                Frame::Stmts { stmts, pc, scoped } => {
                    let Some(stmt) = stmts.get(*pc) else {
                        if *scoped {
                            thread.env.pop_scope();
                        }
                        thread.frames.pop();
                        continue;
                    };
                    *pc += 1;
                    if !self.has_barrier(stmt) {
                        if let Flow::Return(_) = self.exec(&mut thread.env, stmt)? {
                            return Err(return_in_par(block_span));
                        }
                        continue;
                    }
                    self.tick(stmt.span)?;
                    let env = &mut thread.env;
                    match &stmt.kind {
                        StmtKind::Barrier(b) if b.label.name == label => {
                            if !b.body.stmts.is_empty() {
                                return Err(InterpError::unsupported(
                                    "statements inside a barrier",
                                    b.body.span,
                                ));
                            }
                            return Ok(Stop::Barrier(stmt));
                        }
                        StmtKind::Block(b) => {
                            env.push_scope();
                            thread.frames.push(Frame::Stmts {
                                stmts: &b.stmts,
                                pc: 0,
                                scoped: true,
                            });
                        }
                        StmtKind::If {
                            cond,
                            then_branch,
                            else_branch,
                        } => {
                            let branch = if self.eval_bool(env, cond)? {
                                Some(&**then_branch)
                            } else {
                                else_branch.as_deref()
                            };
                            if let Some(branch) = branch {
                                env.push_scope();
                                thread.frames.push(Frame::Stmts {
                                    stmts: std::slice::from_ref(branch),
                                    pc: 0,
                                    scoped: true,
                                });
                            }
                        }
                        StmtKind::While {
                            cond,
                            body,
                            contract,
                        } => thread.frames.push(Frame::Loop {
                            cond: Some(cond),
                            body,
                            update: None,
                            started: false,
                            scoped: false,
                            contract,
                        }),
                        StmtKind::For {
                            init,
                            cond,
                            update,
                            body,
                            contract,
                        } => {
                            env.push_scope();
                            if let Some(init) = init {
                                self.exec(env, init)?;
                            }
                            thread.frames.push(Frame::Loop {
                                cond: cond.as_ref(),
                                body,
                                update: update.as_deref(),
                                started: false,
                                scoped: true,
                                contract,
                            });
                        }
                        // A barrier of an enclosing block inside a nested one, or a barrier
                        // where a thread cannot stop (inside a loop update, say).
                        _ => {
                            return Err(InterpError::unsupported(
                                format!("a barrier of `{label}` cannot be reached here, or a barrier of an enclosing par block inside a nested one"),
                                stmt.span,
                            ))
                        }
                    }
                }
                Frame::Loop {
                    cond,
                    body,
                    update,
                    started,
                    scoped,
                    contract,
                } => {
                    let (cond, body, scoped, contract) = (*cond, *body, *scoped, *contract);
                    let again = *started;
                    if again {
                        if let Some(u) = *update {
                            self.exec(&mut thread.env, u)?;
                        }
                    }
                    *started = true;
                    self.check_invariants(&mut thread.env, contract, again)?;
                    self.tick(body.span)?;
                    let go_on = match cond {
                        Some(c) => self.eval_bool(&mut thread.env, c)?,
                        None => true,
                    };
                    if go_on {
                        thread.env.push_scope();
                        thread.frames.push(Frame::Stmts {
                            stmts: std::slice::from_ref(body),
                            pc: 0,
                            scoped: true,
                        });
                    } else {
                        if scoped {
                            thread.env.pop_scope();
                        }
                        thread.frames.pop();
                    }
                }
            }
        }
    }

    /// Whether `stmt` contains a barrier statement, not looking into nested par blocks,
    /// ghost code or specification-only statements. Cached by address.
    fn has_barrier(&mut self, stmt: &'p Stmt) -> bool {
        let key = stmt as *const Stmt as usize;
        if let Some(&b) = self.barrier_cache.get(&key) {
            return b;
        }
        let mut found = false;
        let mut stack = vec![stmt];
        while let Some(s) = stack.pop() {
            match &s.kind {
                StmtKind::Barrier(_) => {
                    found = true;
                    break;
                }
                StmtKind::Block(b) => stack.extend(&b.stmts),
                StmtKind::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    stack.push(then_branch);
                    stack.extend(else_branch.as_deref());
                }
                StmtKind::While { body, .. } => stack.push(body),
                StmtKind::For {
                    init, update, body, ..
                } => {
                    stack.push(body);
                    stack.extend(init.as_deref());
                    stack.extend(update.as_deref());
                }
                _ => {}
            }
        }
        self.barrier_cache.insert(key, found);
        found
    }
}

fn return_in_par(span: Span) -> InterpError {
    InterpError::unsupported("`return` inside a par block", span)
}

fn record_at(
    level: &mut Level,
    r: usize,
    i: usize,
    access: Access,
    span: Span,
) -> Result<(), InterpError> {
    let t = level.current;
    let cell = level.log.entry((r, i)).or_default();
    let conflict = match access {
        Access::Write => match cell.writer {
            Some((w, ws)) if w != t => Some((w, Access::Write, ws)),
            _ => cell
                .readers
                .iter()
                .flatten()
                .find(|(rt, _)| *rt != t)
                .map(|&(rt, rs)| (rt, Access::Read, rs)),
        },
        Access::Read => match cell.writer {
            Some((w, ws)) if w != t => Some((w, Access::Write, ws)),
            _ => None,
        },
    };
    if let Some((other, other_access, other_span)) = conflict {
        return Err(InterpError::DataRace {
            location: format!("array#{r}[{i}]"),
            first_thread: level.describe(other),
            first_access: other_access,
            first_span: other_span,
            second_thread: level.describe(t),
            second_access: access,
            span,
        });
    }
    match access {
        Access::Write => {
            if cell.writer.is_none() {
                cell.writer = Some((t, span));
            }
        }
        Access::Read => match cell.readers {
            [None, _] => cell.readers[0] = Some((t, span)),
            [Some((r0, _)), None] if r0 != t => cell.readers[1] = Some((t, span)),
            _ => {}
        },
    }
    Ok(())
}

/// The launching method as a launcher sees it.
struct Scope<'m, 'p, 'i, 'e> {
    machine: &'m mut Machine<'p, 'i>,
    env: &'e mut Env<'p>,
}

impl<'p> super::LaunchScope<'p> for Scope<'_, 'p, '_, '_> {
    fn value(&self, name: &str) -> Option<Value> {
        self.env.get(name).flatten()
    }

    fn eval_int(
        &mut self,
        expr: &'p Expr,
        bound: Option<(&'p str, i128)>,
    ) -> Result<i128, InterpError> {
        let Some((name, value)) = bound else {
            return self.machine.eval_int(self.env, expr);
        };
        self.env.push_scope();
        self.env.declare(name, Some(Value::Int(value)));
        let result = self.machine.eval_int(self.env, expr);
        self.env.pop_scope();
        result
    }

    fn memory(&mut self) -> &mut super::Memory {
        &mut self.machine.memory
    }
}
