//! fs_mark (-d -D -N -n -L -t -S0 -s -w): `threads` processes, each
//! creating `files` files per iteration, writing `file_bytes` in
//! `write_bytes` write() calls, closing them; files are kept. Each
//! iteration ends when every thread has finished its files; then fs_mark
//! prints Files/sec (the sum over threads of files / loop time) and the
//! App Overhead (the sum of the time outside system calls, in µs).
//!
//! Directories as fs_mark 3.3 (MMTests' version in 2011) picks them with
//! -D and -N: every iteration forks its threads afresh, and each child's
//! setup() starts at subdirectory `tv_sec % D` of its -d directory, moving
//! to the next after N files of that iteration. With N at least the files
//! of an iteration (seed 000: 208 files, N 5000), all threads of an
//! iteration write into one subdirectory, a new one each iteration. The
//! wall clock's epoch is drawn from the run's seed.

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid, Wq};
use crate::spec::FsmarkSpec;
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Create,
    Write { ino: u32, done: u64 },
    Close { ino: u32 },
    Waiting,
}

struct Thread {
    pid: Pid,
    root: u32,
    /// The subdirectory being filled, and the files put there in this
    /// iteration (fs_mark's current_subdir and files_in_subdir).
    subdir: u32,
    in_subdir: u32,
    files_done: u64,
    iter_files: u32,
    phase: Phase,
    loop_start: u64,
    loop_end: u64,
    /// Wall time inside system calls in this iteration, and the current call's start.
    in_calls: u64,
    call_start: Option<u64>,
}

/// setup(): the first subdirectory of a child whose wall clock reads `wall_ns`.
fn start_subdir(wall_ns: u64, subdirs: u32) -> u32 {
    (wall_ns / 1_000_000_000 % u64::from(subdirs)) as u32
}

/// setup_file_name() with -N: the subdirectory of the next file and the
/// files already put there, given the current ones.
fn next_subdir(subdir: u32, in_subdir: u32, per_subdir: u32, subdirs: u32) -> (u32, u32) {
    if in_subdir >= per_subdir {
        ((subdir + 1) % subdirs, 0)
    } else {
        (subdir, in_subdir)
    }
}

pub struct Fsmark {
    w: FsmarkSpec,
    threads: Vec<Thread>,
    by_pid: super::PidIndex,
    iteration: u32,
    arrived: usize,
    /// The wall clock at simulated time 0 (ns since the epoch, from the seed).
    epoch_ns: u64,
    pub results: Vec<(f64, u64)>,
    pub oom: bool,
}

impl Fsmark {
    pub fn start(k: &mut Kernel, w: &FsmarkSpec) -> Fsmark {
        let (cpus, mems) = super::affinity(k, w.cpus.as_ref(), w.mems_allowed.as_ref());
        let threads: Vec<Thread> = (0..w.threads)
            .map(|i| Thread {
                pid: super::spawn_user(k, "fs_mark", cpus.clone(), mems.clone()),
                root: i % w.dirs,
                subdir: 0,
                in_subdir: 0,
                files_done: 0,
                iter_files: 0,
                phase: Phase::Create,
                loop_start: 0,
                loop_end: 0,
                in_calls: 0,
                call_start: None,
            })
            .collect();
        let by_pid = super::PidIndex::new(threads.iter().map(|t| t.pid));
        // A day's worth of seconds: what the epoch's remainder decides (the
        // first subdirectory and where the second boundaries fall) varies.
        let epoch_ns = crate::sched::SplitMix64::new(k.seed).next_u64() % (86_400 * 1_000_000_000);
        let mut f = Fsmark { w: w.clone(), threads, by_pid, iteration: 0, arrived: 0, epoch_ns, results: Vec::new(), oom: false };
        for ti in 0..f.threads.len() {
            f.setup(ti, 0);
        }
        f
    }

    /// A child's setup(): the subdirectory it starts in is the wall clock's
    /// seconds modulo -D.
    fn setup(&mut self, ti: usize, now: u64) {
        let t = &mut self.threads[ti];
        t.subdir = start_subdir(self.epoch_ns + now, self.w.subdirs);
        t.in_subdir = 0;
    }

    fn begin_call(t: &mut Thread, now: u64) {
        if t.call_start.is_none() {
            t.call_start = Some(now);
        }
    }
    fn end_call(t: &mut Thread, now: u64) {
        if let Some(s) = t.call_start.take() {
            t.in_calls += now - s;
        }
    }

    pub fn step(&mut self, k: &mut Kernel, pid: Pid, ctx: &mut Ctx) -> Next {
        let ti = self.by_pid.of(pid);
        let now = ctx.now;
        let ps = k.page_size;
        match self.threads[ti].phase {
            Phase::Waiting => {
                if self.iteration >= self.w.iterations {
                    return Next::Exit;
                }
                self.setup(ti, now);
                let t = &mut self.threads[ti];
                t.phase = Phase::Create;
                t.loop_start = now;
                t.in_calls = 0;
                t.iter_files = 0;
                Next::Run
            }
            Phase::Create => {
                let t = &mut self.threads[ti];
                Self::begin_call(t, now);
                ctx.user += k.cost.user_store_ns;
                // setup_file_name(): DIR_ROUND_ROBIN with -N (taken when
                // the creat succeeds; a creat that sleeps comes back here).
                let (subdir, in_subdir) = next_subdir(t.subdir, t.in_subdir, self.w.files_per_subdir, self.w.subdirs);
                let dir = t.root * self.w.subdirs + subdir;
                match k.sys_creat(ctx, dir) {
                    Ok(ino) => {
                        let t = &mut self.threads[ti];
                        t.subdir = subdir;
                        t.in_subdir = in_subdir + 1;
                        Self::end_call(t, ctx.clock());
                        t.phase = if self.w.file_bytes > 0 { Phase::Write { ino, done: 0 } } else { Phase::Close { ino } };
                        Next::Run
                    }
                    Err(AllocRes::Sleep(n)) => n,
                    Err(_) => {
                        self.oom = true;
                        Next::Exit
                    }
                }
            }
            Phase::Write { ino, done } => {
                let t = &mut self.threads[ti];
                Self::begin_call(t, now);
                if t.call_start == Some(now) {
                    ctx.sys += k.cost.syscall_ns;
                    ctx.user += k.cost.user_store_ns;
                }
                let end = (done + self.w.write_bytes).min(self.w.file_bytes);
                let mut off = done;
                while off < end {
                    let idx = off / ps;
                    let chunk = (ps - off % ps).min(end - off);
                    match k.write_page(ctx, ino, idx, chunk) {
                        PageOp::Done => off += chunk,
                        PageOp::Sleep(n) => {
                            self.threads[ti].phase = Phase::Write { ino, done: off };
                            return n;
                        }
                        PageOp::Oom => {
                            self.oom = true;
                            return Next::Exit;
                        }
                    }
                    if let Some(n) = k.balance_dirty_pages_ratelimited(ctx, 1) {
                        self.threads[ti].phase = Phase::Write { ino, done: off };
                        return n;
                    }
                }
                let t = &mut self.threads[ti];
                Self::end_call(t, ctx.clock());
                t.phase = if off >= self.w.file_bytes { Phase::Close { ino } } else { Phase::Write { ino, done: off } };
                Next::Run
            }
            Phase::Close { ino } => {
                let t = &mut self.threads[ti];
                Self::begin_call(t, now);
                k.sys_close(ctx, ino);
                let t = &mut self.threads[ti];
                Self::end_call(t, ctx.clock());
                t.files_done += 1;
                t.iter_files += 1;
                if t.iter_files < self.w.files {
                    t.phase = Phase::Create;
                    return Next::Run;
                }
                t.loop_end = ctx.clock();
                t.phase = Phase::Waiting;
                self.arrived += 1;
                if self.arrived < self.threads.len() {
                    return Next::Sleep { until: None, wq: Some(Wq::Barrier(0)), io: false };
                }
                // The last thread of the iteration: fs_mark's parent sums the results.
                let mut fps = 0.0;
                let mut overhead = 0u64;
                for t in &self.threads {
                    let wall = (t.loop_end - t.loop_start).max(1);
                    fps += self.w.files as f64 / (wall as f64 / 1e9);
                    overhead += wall.saturating_sub(t.in_calls) / 1000;
                }
                self.results.push(((fps * 10.0).round() / 10.0, overhead));
                self.iteration += 1;
                self.arrived = 0;
                k.sched.wake_up_all(Wq::Barrier(0), ctx.clock());
                if self.iteration >= self.w.iterations {
                    return Next::Exit;
                }
                self.setup(ti, ctx.clock());
                let t = &mut self.threads[ti];
                t.phase = Phase::Create;
                t.loop_start = ctx.clock();
                t.in_calls = 0;
                t.iter_files = 0;
                Next::Run
            }
        }
    }

    pub fn json(&self) -> Value {
        let its: Vec<Value> = self.results.iter().map(|&(f, o)| json!({ "files_per_sec": f, "overhead_us": o })).collect();
        json!({ "fsmark": { "iterations": its } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The subdirectories one child fills in an iteration of `files` files.
    fn walk(wall_ns: u64, files: u32, per_subdir: u32, subdirs: u32) -> Vec<u32> {
        let (mut sd, mut n) = (start_subdir(wall_ns, subdirs), 0);
        (0..files)
            .map(|_| {
                let (s, k) = next_subdir(sd, n, per_subdir, subdirs);
                sd = s;
                n = k + 1;
                s
            })
            .collect()
    }

    #[test]
    fn an_iteration_of_fewer_files_than_n_stays_in_the_subdirectory_of_its_second() {
        // seed 000: -D 100 -N 5000 -n 208; a child set up at 1234.7 s.
        let dirs = walk(1_234_700_000_000, 208, 5000, 100);
        assert!(dirs.iter().all(|&d| d == 34));
        // The next iteration, 61 s later, fills another.
        assert!(walk(1_295_700_000_000, 208, 5000, 100).iter().all(|&d| d == 95));
    }

    #[test]
    fn after_n_files_a_child_moves_on_and_wraps_at_d() {
        assert_eq!(walk(3_000_000_000, 7, 2, 4), vec![3, 3, 0, 0, 1, 1, 2]);
    }
}
