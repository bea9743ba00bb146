//! File system calls as the workloads use them (fs/namei.c, fs/open.c):
//! creat (an inode and a dentry from the slab, the filesystem's work,
//! under the directory's i_mutex), close (the dentry stays cached,
//! unused), unlink (truncate the page cache, free the blocks, and the
//! inode once nobody holds it).

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::jbd2::{hold, Meta};
use crate::mm::LockHolds;
use crate::slab::{DENTRY, INODE};
use crate::sched::{Next, Pid, Wq};
use crate::spec::FsKind;
use std::collections::VecDeque;

/// The directories' i_mutex (struct mutex, kernel/mutex.c as 3.0 has it),
/// one per directory. open(O_CREAT) takes the parent's in do_last
/// before the lookup (the dentry's allocation) and holds it through the
/// filesystem's create (ext4_create: the journal handle, the inode's
/// allocation and any sleep in them) until the new file is in the
/// directory.
///
/// - Free: the caller takes it. If an earlier hold (recorded by a step
///   that began earlier but held the mutex at a later clock) covers the
///   moment it asks, it spins until that hold ends, as
///   mutex_spin_on_owner spins while the owner runs: CPU time, no sleep.
///   The holds are kept as intervals (`LockHolds`, as zone->lock's), so
///   a hold that had not begun when the caller asks is not waited for.
/// - Held by a task that sleeps (in reclaim, in the journal): the caller
///   joins the mutex's wait list (once: a waiter that wakes and finds the
///   mutex taken again keeps its place) and sleeps.
/// - Unlock wakes the first waiter, which takes the mutex when it runs
///   unless a running task took it first (3.0's mutexes are not handed
///   over; a woken waiter can lose the lock to a spinner).
///
/// Approximations: a spinner here waits through a chain of holds that
/// follow each other (3.0's spinner goes on to the next owner when it
/// sees the mutex free in between, and sleeps when it sees the owner
/// change directly, a race the model does not resolve), and a woken
/// waiter that finds a hold covering its moment spins where 3.0's would
/// sleep again; need_resched never stops a spin.
///
/// Only creat takes it here (the workloads' unlinks are single-threaded).
#[derive(Default)]
pub struct DirLocks {
    /// The directories whose i_mutex is held, waited on or held until later
    /// than the current step began: (directory, its owner (None: free),
    /// when the owner took it, its recent holds, its waiters in arrival
    /// order). Any other directory's is free and uncontended; so at most a
    /// few entries per task, searched in order.
    locks: Vec<(u32, DirLock)>,
    /// Sleeps on a held i_mutex, and their time in all (ns).
    pub sleeps: u64,
    pub sleep_ns: u64,
    /// Time spun on a just-released i_mutex (ns).
    pub spin_ns: u64,
}

#[derive(Default)]
struct DirLock {
    owner: Option<Pid>,
    held_from: u64,
    holds: LockHolds,
    waiters: VecDeque<(Pid, u64)>,
}

impl DirLocks {
    pub fn state_bytes(&self) -> u64 {
        (self.locks.capacity() * std::mem::size_of::<(u32, DirLock)>() + self.locks.iter().map(|l| l.1.waiters.capacity() * 16).sum::<usize>()) as u64
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "sleeps": self.sleeps,
            "sleep_s": (self.sleep_ns / 1000) as f64 / 1e6,
            "spin_s": (self.spin_ns / 1000) as f64 / 1e6,
        })
    }

    /// Directory `dir`'s mutex, at a step that began at `now` (steps run
    /// in order of their start: entries free, unwaited and released by
    /// `now` can matter to no later step and are dropped).
    fn lock(&mut self, dir: u32, now: u64) -> &mut DirLock {
        self.locks.retain(|(d, l)| *d == dir || l.owner.is_some() || !l.waiters.is_empty() || l.holds.busy_after(now));
        let i = match self.locks.iter().position(|(d, _)| *d == dir) {
            Some(i) => i,
            None => {
                self.locks.push((dir, DirLock::default()));
                self.locks.len() - 1
            }
        };
        &mut self.locks[i].1
    }
}

impl Kernel {
    /// mutex_lock(&dir->i_mutex): Ok once the caller holds it (at once if
    /// it already does: a creat resumed after a sleep), else the sleep on
    /// its wait list. See [`DirLocks`].
    pub fn dir_mutex_lock(&mut self, ctx: &mut Ctx, dir: u32) -> Result<(), Next> {
        let pid = ctx.pid;
        let clock = ctx.clock();
        let dl = &mut self.dir_locks;
        let l = dl.lock(dir, ctx.now);
        match l.owner {
            Some(o) if o == pid => Ok(()),
            Some(_) => {
                if !l.waiters.iter().any(|&(p, _)| p == pid) {
                    l.waiters.push_back((pid, clock));
                    dl.sleeps += 1;
                }
                Err(Next::Sleep { until: None, wq: Some(Wq::IMutex), io: false })
            }
            None => {
                let spin = l.holds.acquire(ctx.now, clock, 0) - clock;
                l.owner = Some(pid);
                l.held_from = clock + spin;
                let since = l.waiters.iter().position(|&(p, _)| p == pid).and_then(|k| l.waiters.remove(k)).map(|(_, t)| t);
                if let Some(t) = since {
                    dl.sleep_ns += clock.saturating_sub(t);
                }
                dl.spin_ns += spin;
                ctx.sys += spin;
                Ok(())
            }
        }
    }

    /// mutex_unlock(&dir->i_mutex): free from the caller's clock on; its
    /// first waiter is woken.
    pub fn dir_mutex_unlock(&mut self, ctx: &mut Ctx, dir: u32) {
        let clock = ctx.clock();
        let l = self.dir_locks.lock(dir, ctx.now);
        debug_assert_eq!(l.owner, Some(ctx.pid), "dir {dir}'s i_mutex unlocked by a task not holding it");
        l.owner = None;
        l.holds.acquire(ctx.now, l.held_from, clock - l.held_from);
        if let Some(&(w, _)) = l.waiters.front() {
            self.sched.wake_up_pid(Wq::IMutex, w, clock);
        }
    }

    /// creat(): Ok(inode number), or the slab allocation's sleep/failure.
    /// The directory's i_mutex is held from the first call until the file
    /// is created or the creat fails, across the sleeps in between.
    pub fn sys_creat(&mut self, ctx: &mut Ctx, dir: u32) -> Result<u32, AllocRes> {
        if let Err(sleep) = self.dir_mutex_lock(ctx, dir) {
            return Err(AllocRes::Sleep(sleep));
        }
        let r = self.sys_creat_fs(ctx, dir);
        if !matches!(r, Err(AllocRes::Sleep(_))) {
            self.dir_mutex_unlock(ctx, dir);
        }
        r
    }

    fn sys_creat_fs(&mut self, ctx: &mut Ctx, dir: u32) -> Result<u32, AllocRes> {
        // ext4_create's handle, held through the new inode's allocation and
        // any sleep in it (jbd2.rs); here also through the dentry's, which
        // the kernel allocates before (lookup) and the engine after.
        if self.fs.kind == FsKind::Ext4 {
            if let Err(sleep) = self.journal_start(ctx, hold::CREATE) {
                return Err(AllocRes::Sleep(sleep));
            }
            // ext4_new_inode's and ext4_add_entry's write access (BJ_Shadow waits).
            let g = self.fs.group_of_dir(dir);
            let ms = [Meta::InodeBitmap(g), Meta::Gdt(g), Meta::Itable(self.fs.next_ino()), Meta::Dir(dir)];
            if let Err(sleep) = self.journal_get_write_access(ctx, &ms) {
                return Err(AllocRes::Sleep(sleep));
            }
        }
        let r = self.sys_creat_locked(ctx, dir);
        match r {
            Ok(ino) => {
                let g = self.fs.group_of_dir(dir);
                self.journal_dirty_metadata(Meta::Itable(ino));
                self.journal_dirty_metadata(Meta::InodeBitmap(g));
                self.journal_dirty_metadata(Meta::Gdt(g));
                self.journal_dirty_metadata(Meta::Dir(dir));
                self.journal_stop(ctx, hold::CREATE);
            }
            Err(AllocRes::Sleep(_)) => {}
            Err(_) => self.journal_stop(ctx, hold::CREATE),
        }
        r
    }

    fn sys_creat_locked(&mut self, ctx: &mut Ctx, dir: u32) -> Result<u32, AllocRes> {
        let pid = ctx.pid as usize;
        // An inode object kept from a call whose dentry allocation slept:
        // the retry resumes that allocation, not a new one.
        let inode_obj = match std::mem::replace(&mut self.kt[pid].inode_reserve, crate::page::NIL) {
            crate::page::NIL => {
                ctx.sys += self.cost.syscall_ns + self.cost.inode_ns;
                self.kmem_cache_alloc(ctx, INODE)?
            }
            o => o,
        };
        let dentry_obj = match self.kmem_cache_alloc(ctx, DENTRY) {
            Ok(o) => o,
            Err(AllocRes::Sleep(n)) => {
                self.kt[pid].inode_reserve = inode_obj;
                return Err(AllocRes::Sleep(n));
            }
            Err(e) => {
                self.kmem_cache_free(ctx, INODE, inode_obj);
                return Err(e);
            }
        };
        let ino = self.fs.new_inode(dir);
        let i = &mut self.fs.inodes[ino as usize];
        i.inode_obj = inode_obj;
        i.dentry_obj = dentry_obj;
        i.has_dentry = true;
        i.i_count = 2; // the dentry and the open file
        i.i_writecount = 1; // creat opens for writing
        i.dirty_lo = u64::MAX;
        Ok(ino)
    }

    /// close(): the open file's reference goes; the dentry stays cached.
    pub fn sys_close(&mut self, ctx: &mut Ctx, ino: u32) {
        ctx.sys += self.cost.syscall_ns;
        let i = &mut self.fs.inodes[ino as usize];
        i.i_writecount = i.i_writecount.saturating_sub(1);
        self.iput(ctx, ino);
        self.dput(ino);
    }

    /// unlink() of a closed file: drop its pages (waiting on writeback),
    /// then its dentry and inode.
    pub fn sys_unlink(&mut self, ctx: &mut Ctx, ino: u32) -> PageOp {
        match self.truncate_inode_pages(ctx, ino) {
            PageOp::Done => {}
            other => return other,
        }
        // ext4_evict_inode: after the page cache is gone, a handle for
        // freeing the blocks and the inode (jbd2.rs).
        if self.fs.kind == FsKind::Ext4 {
            if let Err(sleep) = self.journal_start(ctx, hold::UNLINK) {
                return PageOp::Sleep(sleep);
            }
            let dir = self.fs.inodes[ino as usize].dir;
            let g = self.fs.group_of_dir(dir);
            if let Err(sleep) = self.journal_get_write_access(ctx, &[Meta::Itable(ino), Meta::InodeBitmap(g), Meta::Gdt(g), Meta::Dir(dir)]) {
                return PageOp::Sleep(sleep);
            }
            let ps = self.page_size;
            let bitmaps: Vec<u32> = self.fs.inodes[ino as usize].extents.iter().map(|e| self.fs.bitmap_of_block(e.1, ps)).collect();
            for b in bitmaps {
                self.journal_dirty_metadata(Meta::BlockBitmap(b));
            }
            self.journal_dirty_metadata(Meta::Itable(ino));
            self.journal_dirty_metadata(Meta::InodeBitmap(g));
            self.journal_dirty_metadata(Meta::Gdt(g));
            self.journal_dirty_metadata(Meta::Dir(dir));
            self.journal_stop(ctx, hold::UNLINK);
        }
        ctx.sys += self.cost.syscall_ns + self.cost.inode_ns;
        let i = &mut self.fs.inodes[ino as usize];
        i.unlinked = true;
        if i.on_dirty_list {
            i.on_dirty_list = false;
            if let Some(b) = self.bdi.first_mut() {
                b.b_dirty.retain(|&x| x != ino);
                b.b_io.retain(|&x| x != ino);
                b.b_more_io.retain(|&x| x != ino);
            }
        }
        if i.on_dentry_lru {
            i.on_dentry_lru = false;
            self.fs.nr_unused_dentries -= 1;
        }
        if i.has_dentry {
            i.has_dentry = false;
            let obj = i.dentry_obj;
            self.kmem_cache_free(ctx, DENTRY, obj);
        }
        let i = &mut self.fs.inodes[ino as usize];
        if i.on_inode_lru {
            i.on_inode_lru = false;
            self.fs.nr_unused_inodes -= 1;
        }
        if i.in_use {
            let obj = i.inode_obj;
            self.kmem_cache_free(ctx, INODE, obj);
        }
        self.fs.destroy_inode(ino);
        PageOp::Done
    }
}
