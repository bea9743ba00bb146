//! File system calls as the workloads use them (fs/namei.c, fs/open.c):
//! creat (an inode and a dentry from the slab, the filesystem's work),
//! close (the dentry stays cached, unused), unlink (truncate the page
//! cache, free the blocks, and the inode once nobody holds it).

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::jbd2::{hold, Meta};
use crate::slab::{DENTRY, INODE};
use crate::spec::FsKind;

impl Kernel {
    /// creat(): Ok(inode number), or the slab allocation's sleep/failure.
    pub fn sys_creat(&mut self, ctx: &mut Ctx, dir: u32) -> Result<u32, AllocRes> {
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
