//! Buffer heads on page-cache pages (fs/buffer.c in brief).
//!
//! In 3.0 both ext4 and xfs write through buffer heads: write_begin
//! (block_write_begin) and page_mkwrite (block_page_mkwrite) attach one
//! `struct buffer_head` per block to the page (create_empty_buffers:
//! PG_private, page->private), allocated with GFP_NOFS from the
//! `buffer_head` slab cache. That cache is SLAB_RECLAIM_ACCOUNT, so its
//! pages count in NR_SLAB_RECLAIMABLE of the zone they came from, which is
//! what zone_reclaim compares with min_slab_ratio; it has no shrinker. The
//! buffers go when the page leaves the cache (try_to_release_page in
//! shrink_page_list and invalidate_complete_page, do_invalidatepage in
//! truncate), and their slab page returns to the allocator when its last
//! object does.
//!
//! Pages read by mpage_readpages (contiguous blocks, or holes) get no
//! buffers, and the swap cache never has any. With 4 KiB blocks a page has
//! exactly one buffer head, which is what the engine models (one object per
//! PG_PRIVATE page). buffer_heads_over_limit (10% of lowmem, about four
//! buffer heads a page on 64-bit) is never reached with one a page and is
//! not modelled.

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::page_alloc::AllocRes;
use crate::slab::BUFFER_HEAD;

impl Kernel {
    /// alloc_page_buffers, taken before the page it is for: the engine
    /// cannot hold the page locked across an allocation that may reclaim
    /// or sleep, so the task allocates its buffer head first and keeps it
    /// (KTask::bh_reserve) until a page needs it. A sleep or failure of the
    /// slab allocation is returned for the caller to retry.
    pub fn reserve_buffers(&mut self, ctx: &mut Ctx) -> Result<(), AllocRes> {
        let pid = ctx.pid as usize;
        if self.kt[pid].bh_reserve != NIL {
            return Ok(());
        }
        let obj = self.kmem_cache_alloc(ctx, BUFFER_HEAD)?;
        self.kt[pid].bh_reserve = obj;
        Ok(())
    }

    /// The task's reserved buffer head and inode object, if it holds them,
    /// back to the slab (the task exits).
    pub fn release_buffers(&mut self, ctx: &mut Ctx) {
        let obj = std::mem::replace(&mut self.kt[ctx.pid as usize].bh_reserve, NIL);
        if obj != NIL {
            self.kmem_cache_free(ctx, BUFFER_HEAD, obj);
        }
        // So does an inode object a creat() that never completed held.
        let obj = std::mem::replace(&mut self.kt[ctx.pid as usize].inode_reserve, NIL);
        if obj != NIL {
            self.kmem_cache_free(ctx, crate::slab::INODE, obj);
        }
    }

    /// create_empty_buffers: give a page-cache page without buffers the
    /// task's reserved buffer head (reserve_buffers must have succeeded).
    pub fn create_empty_buffers(&mut self, ctx: &mut Ctx, p: u32) {
        if self.mm.pages.test(p, PG_PRIVATE) {
            return;
        }
        let pid = ctx.pid as usize;
        let obj = self.kt[pid].bh_reserve;
        assert!(obj != NIL, "create_empty_buffers without a reserved buffer head");
        self.kt[pid].bh_reserve = NIL;
        self.mm.pages.set(p, PG_PRIVATE);
        self.mm.pages.private[p as usize] = obj;
    }

    /// Whether a write to page `index` of `ino` needs a buffer head first:
    /// the page is not cached, or cached without buffers.
    pub fn needs_buffers(&self, ino: u32, index: u64) -> bool {
        match self.find_get_page(ino, index) {
            Some(p) => !self.mm.pages.test(p, PG_PRIVATE),
            None => true,
        }
    }

    /// try_to_free_buffers on a page leaving the cache: its buffer head goes
    /// back to the slab.
    pub fn try_to_free_buffers(&mut self, ctx: &mut Ctx, p: u32) {
        if self.mm.pages.test_clear(p, PG_PRIVATE) {
            let obj = self.mm.pages.private[p as usize];
            self.mm.pages.private[p as usize] = NIL;
            self.kmem_cache_free(ctx, BUFFER_HEAD, obj);
        }
    }
}
