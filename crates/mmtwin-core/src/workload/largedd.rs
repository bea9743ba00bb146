//! LARGE DD (MMTests 2011 largedd): download a tarfile (written at the
//! network's rate), dd it `copies` times (read the source, write a new
//! file, `dd_bytes` a call), then delete the copies. Seconds per phase.

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid};
use crate::spec::LargeddSpec;
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Download { page: u64 },
    DdOpen { copy: u32 },
    Dd { copy: u32, ino: u32, page: u64, sub: u64, wrote: bool },
    Delete { copy: u32 },
    Done,
}

pub struct Largedd {
    w: LargeddSpec,
    phase: Phase,
    src: u32,
    copies: Vec<u32>,
    marks: Vec<u64>,
    pub oom: bool,
}

/// Pages the downloader writes per network chunk.
const NET_CHUNK_PAGES: u64 = 16;

impl Largedd {
    pub fn start(k: &mut Kernel, w: &LargeddSpec) -> Largedd {
        let (cpus, mems) = super::affinity(k, w.cpus.as_ref(), w.mems_allowed.as_ref());
        super::spawn_user(k, "largedd", cpus, mems);
        Largedd { w: w.clone(), phase: Phase::Start, src: 0, copies: Vec::new(), marks: Vec::new(), oom: false }
    }

    fn fail<T>(&mut self, r: Result<T, AllocRes>) -> Result<T, Next> {
        match r {
            Ok(v) => Ok(v),
            Err(AllocRes::Sleep(n)) => Err(n),
            Err(_) => {
                self.oom = true;
                Err(Next::Exit)
            }
        }
    }

    pub fn step(&mut self, k: &mut Kernel, _pid: Pid, ctx: &mut Ctx) -> Next {
        let ps = k.page_size;
        let tar_pages = self.w.tar_bytes.div_ceil(ps);
        match self.phase {
            Phase::Start => {
                self.marks.push(ctx.now);
                let r = k.sys_creat(ctx, 0);
                match self.fail(r) {
                    Ok(ino) => {
                        self.src = ino;
                        self.phase = Phase::Download { page: 0 };
                        Next::Run
                    }
                    Err(n) => n,
                }
            }
            Phase::Download { page } => {
                let end = (page + NET_CHUNK_PAGES).min(tar_pages);
                ctx.sys += k.cost.syscall_ns;
                let mut p = page;
                while p < end {
                    match k.write_page(ctx, self.src, p, ps) {
                        PageOp::Done => p += 1,
                        PageOp::Sleep(n) => {
                            self.phase = Phase::Download { page: p };
                            return n;
                        }
                        PageOp::Oom => {
                            self.oom = true;
                            return Next::Exit;
                        }
                    }
                    if let Some(n) = k.balance_dirty_pages_ratelimited(ctx, 1) {
                        self.phase = Phase::Download { page: p };
                        return n;
                    }
                }
                if p >= tar_pages {
                    k.sys_close(ctx, self.src);
                    // The source stays open for the dd phase (held by the page cache's users).
                    k.fs.inodes[self.src as usize].i_count += 1;
                    self.marks.push(ctx.clock());
                    self.phase = Phase::DdOpen { copy: 0 };
                    return Next::Run;
                }
                self.phase = Phase::Download { page: p };
                // The network delivers the next chunk at download_mib_s.
                let ns = (end - page) * ps * 1_000_000_000 / (self.w.download_mib_s as u64 * (1 << 20));
                Next::Sleep { until: Some(ctx.now + ns), wq: None, io: false }
            }
            Phase::DdOpen { copy } => {
                if copy >= self.w.copies {
                    self.marks.push(ctx.clock());
                    self.phase = Phase::Delete { copy: 0 };
                    return Next::Run;
                }
                let r = k.sys_creat(ctx, 1 + copy);
                match self.fail(r) {
                    Ok(ino) => {
                        // Each dd opens the source afresh.
                        k.file_ra_state_init(self.src);
                        self.copies.push(ino);
                        self.phase = Phase::Dd { copy, ino, page: 0, sub: 0, wrote: false };
                        Next::Run
                    }
                    Err(n) => n,
                }
            }
            Phase::Dd { copy, ino, page, sub, wrote } => {
                if page >= tar_pages {
                    k.sys_close(ctx, ino);
                    self.phase = Phase::DdOpen { copy: copy + 1 };
                    return Next::Run;
                }
                // dd copies in dd_bytes blocks: a read() and a write() each.
                // Below a page, each page takes `per_page` of each: `sub`
                // counts them, so a sleep resumes at the block it was in.
                let per_page = (ps / self.w.dd_bytes.min(ps)).max(1);
                let chunk = self.w.dd_bytes.min(ps);
                let pages_per_block = (self.w.dd_bytes / ps).max(1);
                let mut pg = page;
                let mut sb = sub;
                let end = (page - page % pages_per_block + pages_per_block).min(tar_pages);
                let mut wrote_cur = wrote;
                while pg < end {
                    while sb < per_page {
                        if !wrote_cur {
                            match k.read_page(ctx, self.src, pg, sb * chunk, chunk) {
                                PageOp::Done => {
                                    // The block's read() and write(), charged once the
                                    // read got its data (a read that slept is retried).
                                    if (pg % pages_per_block == 0 && sb == 0) || per_page > 1 {
                                        ctx.sys += 2 * k.cost.syscall_ns;
                                    }
                                }
                                PageOp::Sleep(n) => {
                                    self.phase = Phase::Dd { copy, ino, page: pg, sub: sb, wrote: false };
                                    return n;
                                }
                                PageOp::Oom => {
                                    self.oom = true;
                                    return Next::Exit;
                                }
                            }
                        }
                        match k.write_page(ctx, ino, pg, chunk) {
                            PageOp::Done => {}
                            PageOp::Sleep(n) => {
                                self.phase = Phase::Dd { copy, ino, page: pg, sub: sb, wrote: true };
                                return n;
                            }
                            PageOp::Oom => {
                                self.oom = true;
                                return Next::Exit;
                            }
                        }
                        wrote_cur = false;
                        sb += 1;
                    }
                    pg += 1;
                    sb = 0;
                    if let Some(n) = k.balance_dirty_pages_ratelimited(ctx, per_page) {
                        self.phase = Phase::Dd { copy, ino, page: pg, sub: 0, wrote: false };
                        return n;
                    }
                }
                self.phase = Phase::Dd { copy, ino, page: pg, sub: 0, wrote: false };
                Next::Run
            }
            Phase::Delete { copy } => {
                if copy as usize >= self.copies.len() {
                    self.marks.push(ctx.clock());
                    self.phase = Phase::Done;
                    return Next::Exit;
                }
                let ino = self.copies[copy as usize];
                match k.sys_unlink(ctx, ino) {
                    PageOp::Done => {
                        self.phase = Phase::Delete { copy: copy + 1 };
                        Next::Run
                    }
                    PageOp::Sleep(n) => n,
                    PageOp::Oom => Next::Exit,
                }
            }
            Phase::Done => Next::Exit,
        }
    }

    pub fn json(&self) -> Value {
        let names = ["download tar", "dd source files", "delete source"];
        let phases: Vec<Value> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| i + 1 < self.marks.len())
            .map(|(i, n)| json!({ "name": n, "seconds": ((self.marks[i + 1] - self.marks[i]) / 1_000_000) as f64 / 1e3 }))
            .collect();
        json!({ "largedd": { "phases": phases } })
    }
}
