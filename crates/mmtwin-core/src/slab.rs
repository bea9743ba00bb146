//! Reclaimable slab caches of dentries and inodes (mm/slab.c in brief) and
//! their shrinkers (fs/dcache.c shrink_dcache_memory, fs/inode.c
//! shrink_icache_memory / prune_icache), driven by shrink_slab's
//! proportional scan (mm/vmscan.c, 3.0).
//!
//! Objects live in slab pages taken from the buddy allocator on the
//! allocating task's node (NR_SLAB_RECLAIMABLE of that zone). With SLUB a
//! page returns to the allocator when its last object is freed. With
//! CONFIG_SLAB an empty slab stays on its node's free list (l3->slabs_free)
//! while the node's free objects are within its free_limit, allocations
//! take partial slabs first, then free ones, and cache_reap
//! ([`Kernel::cache_reap`], every REAPTIMEOUT_LIST3) hands back a fifth of
//! the free limit's worth of free slabs of a node whose free list no
//! allocation touched since the last reap; SLAB's per-cpu and shared
//! object arrays are not modelled. Pruning an unused inode
//! that still has page-cache pages frees those pages first
//! (invalidate_mapping_pages): the "inode steals" (pginodesteal,
//! kswapd_inodesteal).

use crate::alloc::gfp;
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::page_alloc::AllocRes;
use crate::spec::{Era, FsKind, SlabAllocator, Spec};
use crate::vmstat::*;

pub const DENTRY: usize = 0;
pub const INODE: usize = 1;
/// buffer_head: created SLAB_RECLAIM_ACCOUNT, so it counts in
/// NR_SLAB_RECLAIMABLE (and in zone_reclaim's min_slab_ratio test), but it
/// has no shrinker: its objects go when their page leaves the cache.
pub const BUFFER_HEAD: usize = 2;
const SHRINK_BATCH: u64 = 128;
const DEFAULT_SEEKS: u64 = 2;

struct SlabPage {
    pfn: u32,
    inuse: u32,
    free_mask: u64,
    /// Position in its partial list (NIL when full or free).
    ppos: u32,
    /// Whose partial list it is on: the node of the task that allocated it
    /// (the page itself may have come from another node's zone).
    pnode: u32,
}

pub struct Cache {
    pub objs_per_page: u32,
    pages: Vec<SlabPage>,
    free_slots: Vec<u32>,
    /// Partial pages per node (slab page indices).
    partial: Vec<Vec<u32>>,
    /// CONFIG_SLAB's empty slabs kept per node (l3->slabs_free), the most
    /// recently emptied at the back.
    free: Vec<std::collections::VecDeque<u32>>,
    /// l3->free_objects: free objects in the node's partial and free slabs.
    free_objects: Vec<u64>,
    /// l3->free_limit: (1 + the node's CPUs) x batchcount + objects a slab.
    free_limit: Vec<u64>,
    /// l3->free_touched: an allocation took a free slab since the last reap.
    free_touched: Vec<bool>,
    pub objects: u64,
}

/// enable_cpucache's per-cpu array limit by object size (mm/slab.c, 3.0);
/// batchcount is (limit + 1) / 2.
fn slab_batchcount(size: u32, page_size: u32) -> u64 {
    let limit = if size > 131072 {
        1
    } else if size > page_size {
        8
    } else if size > 1024 {
        24
    } else if size > 256 {
        54
    } else {
        120
    };
    (limit + 1) / 2
}

/// REAPTIMEOUT_LIST3: how often cache_reap looks at a node's lists (4 s).
pub const REAP_INTERVAL_NS: u64 = 4_000_000_000;

pub struct Slab {
    pub caches: [Cache; 3],
    /// Slab pages freed so far (reclaim_state->reclaimed_slab).
    pub pages_freed: u64,
    /// shrinker->nr: scan work deferred to the next call, per shrinker.
    deferred: [u64; 2],
    /// When cache_reap next looks at the nodes' lists (CONFIG_SLAB).
    pub next_reap: u64,
}

impl Slab {
    pub fn new(spec: &Spec, nodes: usize) -> Slab {
        let ps = spec.machine.page_size as u32;
        // dentry: 192 bytes; ext4_inode_cache about 1 KiB, xfs_inode about 1.1 KiB.
        let inode_size = match spec.machine.storage.as_ref().map(|s| s.fs.kind) {
            Some(FsKind::Xfs) => 1152,
            _ => 1024,
        };
        let mk = |size: u32| {
            let objs_per_page = (ps / size).clamp(1, 64);
            let batch = slab_batchcount(size, ps);
            let limits = (0..nodes)
                .map(|n| (1 + spec.machine.nodes.get(n).map_or(1, |ns| ns.cpus as u64)) * batch + objs_per_page as u64)
                .collect();
            Cache {
                objs_per_page,
                pages: Vec::new(),
                free_slots: Vec::new(),
                partial: vec![Vec::new(); nodes],
                free: vec![std::collections::VecDeque::new(); nodes],
                free_objects: vec![0; nodes],
                free_limit: limits,
                free_touched: vec![false; nodes],
                objects: 0,
            }
        };
        // struct buffer_head: 104 bytes on 64-bit 3.0 (39 to a 4 KiB page).
        Slab { caches: [mk(192), mk(inode_size), mk(104)], pages_freed: 0, deferred: [0; 2], next_reap: REAP_INTERVAL_NS }
    }
    pub fn state_bytes(&self) -> u64 {
        self.caches.iter().map(|c| c.pages.len() as u64 * 20).sum()
    }
}

impl Kernel {
    /// kmem_cache_alloc on the task's node: Ok(object id) or the allocation's
    /// sleep or failure.
    /// The inode cache allocates with GFP_NOFS (ext4_alloc_inode,
    /// xfs_inode_alloc), and so do buffer heads (alloc_page_buffers);
    /// dentries with GFP_KERNEL (d_alloc).
    pub fn kmem_cache_alloc(&mut self, ctx: &mut Ctx, cache: usize) -> Result<u32, AllocRes> {
        let node = ctx.node;
        // An allocation of this call that slept inside direct reclaim and is
        // now overtaken (another task filled a slab this node's lists hold)
        // finishes that reclaim first (finish_overtaken_alloc), before
        // anything is taken off a list.
        let listed = !self.slab.caches[cache].partial[node].is_empty() || !self.slab.caches[cache].free[node].is_empty();
        if listed && self.in_direct_reclaim(ctx.pid) {
            self.finish_overtaken_alloc(ctx).map_err(AllocRes::Sleep)?;
        }
        let sp = match self.slab_list_take(cache, node) {
            Some(i) => i,
            None => {
                let g = if cache == DENTRY { gfp::GFP_KERNEL } else { gfp::GFP_KERNEL & !gfp::FS };
                let g = g | gfp::RECLAIMABLE;
                match self.k.slab_allocator {
                    SlabAllocator::Slub => {
                        // new_slab: alloc_pages on this node's zonelist. The
                        // page stands for the CPU's current slab (SLUB's
                        // c->page, used whatever node it is on), so it
                        // joins the task's node's list wherever it came
                        // from (SLUB's own lists, by the page's node, and
                        // get_any_partial are not modelled).
                        let r = self.alloc_pages(ctx, g, 0, node);
                        let AllocRes::Page(pfn, zi) = r else { return Err(r) };
                        self.new_slab_page(cache, pfn, zi, node)
                    }
                    SlabAllocator::Slab => self.slab_grow(ctx, cache, g, node)?,
                }
            }
        };
        // Satisfied: no retry state of an allocation of this call that
        // slept earlier stays behind.
        self.kt[ctx.pid as usize].slow = Default::default();
        let c = &mut self.slab.caches[cache];
        let page = &mut c.pages[sp as usize];
        let slot = page.free_mask.trailing_zeros();
        page.free_mask &= !(1u64 << slot);
        page.inuse += 1;
        if page.free_mask == 0 {
            // Taken from the end of its own node's list (slab_grow may
            // have found it on another node's).
            page.ppos = NIL;
            let pn = page.pnode as usize;
            c.partial[pn].pop();
        }
        c.objects += 1;
        let pn = c.pages[sp as usize].pnode as usize;
        c.free_objects[pn] -= 1;
        Ok(sp * 64 + slot)
    }

    /// A slab of `node`'s lists with a free object: the last partial one,
    /// else (CONFIG_SLAB) the most recently emptied free slab, which moves
    /// to the end of the partial list and marks the node's free list
    /// touched (cache_alloc_refill, ____cache_alloc_node).
    fn slab_list_take(&mut self, cache: usize, node: usize) -> Option<u32> {
        let c = &mut self.slab.caches[cache];
        if let Some(&i) = c.partial[node].last() {
            return Some(i);
        }
        let i = c.free[node].pop_back()?;
        c.free_touched[node] = true;
        c.pages[i as usize].ppos = c.partial[node].len() as u32;
        c.partial[node].push(i);
        Some(i)
    }

    /// mm/slab.c's way to a slab with a free object when this node's lists
    /// have none: cache_grow on this node only, in cache_alloc_refill and
    /// again in ____cache_alloc_node (GFP_THISNODE: the node's zones, where
    /// zone_reclaim may run, and no slow path); then fallback_alloc: a
    /// partial slab of another node, in zonelist order, or a page through
    /// the whole allocator (kswapd, direct reclaim), kept on the list of
    /// the node it came from. A task resuming a slept allocation goes
    /// straight back to that last step.
    fn slab_grow(&mut self, ctx: &mut Ctx, cache: usize, g: u32, node: usize) -> Result<u32, AllocRes> {
        let pid = ctx.pid as usize;
        if self.kt[pid].slow.stage == crate::page_alloc::Stage::Fresh {
            for attempt in 0..2 {
                if attempt == 1 {
                    // ____cache_alloc_node looks at the node's lists again:
                    // the first attempt's zone_reclaim may have pruned
                    // objects out of a full slab.
                    if let Some(i) = self.slab_list_take(cache, node) {
                        return Ok(i);
                    }
                }
                if let AllocRes::Page(pfn, zi) = self.alloc_pages(ctx, g | gfp::GFP_THISNODE, 0, node) {
                    return Ok(self.new_slab_page(cache, pfn, zi, node));
                }
            }
            let zonelists = std::rc::Rc::clone(&self.mm.zonelists);
            let zl = &zonelists[node * crate::mm::NR_ZONE_TYPES + crate::alloc::gfp_zone(self.era, g).min(crate::mm::NR_ZONE_TYPES - 1)];
            for &zi in &zl.zones {
                let n = self.mm.zones[zi as usize].node;
                if !self.kt[pid].mems.get(n).copied().unwrap_or(true) {
                    continue;
                }
                if let Some(i) = self.slab_list_take(cache, n) {
                    return Ok(i);
                }
            }
        }
        let r = self.alloc_pages(ctx, g, 0, node);
        let AllocRes::Page(pfn, zi) = r else { return Err(r) };
        let n = self.mm.zones[zi].node;
        Ok(self.new_slab_page(cache, pfn, zi, n))
    }

    /// A fresh slab page from the buddy allocator, on `list_node`'s partial list.
    fn new_slab_page(&mut self, cache: usize, pfn: u32, zi: usize, list_node: usize) -> u32 {
        self.mm.pages.flags[pfn as usize] = PG_SLAB;
        self.mm.pages.owner[pfn as usize] = cache as u32;
        self.mm.census.slab += 1;
        self.zs_add(zi, Zs::NrSlabReclaimable, 1);
        let c = &mut self.slab.caches[cache];
        let full = if c.objs_per_page == 64 { u64::MAX } else { (1u64 << c.objs_per_page) - 1 };
        let page = SlabPage { pfn, inuse: 0, free_mask: full, ppos: NIL, pnode: list_node as u32 };
        let i = match c.free_slots.pop() {
            Some(i) => {
                c.pages[i as usize] = page;
                i
            }
            None => {
                c.pages.push(page);
                (c.pages.len() - 1) as u32
            }
        };
        c.pages[i as usize].ppos = c.partial[list_node].len() as u32;
        c.partial[list_node].push(i);
        c.free_objects[list_node] += c.objs_per_page as u64;
        i
    }

    /// kmem_cache_free (free_block): an empty slab goes back to the
    /// allocator, except that CONFIG_SLAB keeps it on its node's free list
    /// while the node's free objects are within free_limit.
    pub fn kmem_cache_free(&mut self, ctx: &mut Ctx, cache: usize, obj: u32) {
        let (sp, slot) = (obj / 64, obj % 64);
        let keep_free = self.k.slab_allocator == SlabAllocator::Slab;
        let c = &mut self.slab.caches[cache];
        let page = &mut c.pages[sp as usize];
        let was_full = page.free_mask == 0;
        page.free_mask |= 1u64 << slot;
        page.inuse -= 1;
        c.objects -= 1;
        let node = page.pnode as usize;
        c.free_objects[node] += 1;
        if c.pages[sp as usize].inuse == 0 {
            if !was_full {
                let pos = c.pages[sp as usize].ppos as usize;
                c.partial[node].swap_remove(pos);
                if let Some(&moved) = c.partial[node].get(pos) {
                    c.pages[moved as usize].ppos = pos as u32;
                }
                c.pages[sp as usize].ppos = NIL;
            }
            if keep_free && c.free_objects[node] <= c.free_limit[node] {
                c.free[node].push_back(sp);
            } else {
                self.slab_destroy(ctx, cache, sp);
            }
        } else if was_full {
            c.pages[sp as usize].ppos = c.partial[node].len() as u32;
            c.partial[node].push(sp);
        }
    }

    /// slab_destroy: an empty slab's page back to the buddy allocator.
    fn slab_destroy(&mut self, ctx: &mut Ctx, cache: usize, sp: u32) {
        let c = &mut self.slab.caches[cache];
        let page = &c.pages[sp as usize];
        let (pfn, node) = (page.pfn, page.pnode as usize);
        c.free_objects[node] -= c.objs_per_page as u64;
        c.free_slots.push(sp);
        let zi = self.mm.zone_of(pfn);
        self.zs_add(zi, Zs::NrSlabReclaimable, -1);
        self.mm.census.slab -= 1;
        self.mm.pages.flags[pfn as usize] = 0;
        self.mm.free_pages(ctx, pfn, 0);
        self.slab.pages_freed += 1;
    }

    /// cache_reap's look at one node's lists (every REAPTIMEOUT_LIST3):
    /// for each cache, if no allocation took a free slab since the last
    /// look, drain_freelist destroys the oldest free slabs, up to a fifth
    /// of free_limit in slabs (rounded up); otherwise it only clears the
    /// touched mark. The pages go to the per-cpu list of the node's first
    /// CPU (the reaping worker's); its time is not charged to any task.
    pub fn cache_reap(&mut self, node: usize, now: u64) {
        if self.k.slab_allocator != SlabAllocator::Slab {
            return;
        }
        let Some(cpu) = self.mm.cpu_node.iter().position(|&n| n == node) else { return };
        let mut ctx = Ctx { cpu, node, now, sys: 0, spin: 0, user: 0, pid: 0 };
        for cache in [DENTRY, INODE, BUFFER_HEAD] {
            let c = &mut self.slab.caches[cache];
            if c.free_touched[node] {
                c.free_touched[node] = false;
                continue;
            }
            let num = c.objs_per_page as u64;
            let tofree = c.free_limit[node].div_ceil(5 * num);
            for _ in 0..tofree {
                let Some(sp) = self.slab.caches[cache].free[node].pop_front() else { break };
                self.slab_destroy(&mut ctx, cache, sp);
            }
        }
    }

    /// shrink_slab (3.0; 3.1 adds the clamp noted below): scan each
    /// shrinker in proportion to the LRU pages scanned, in batches of
    /// SHRINK_BATCH, deferring what is left (shrinker->nr). A shrinker called
    /// without __GFP_FS returns -1: the batch loop stops and the work stays
    /// deferred for the next caller that may enter the filesystem.
    /// Returns what the shrinkers report freed (their counts drop).
    pub fn shrink_slab_objects(&mut self, ctx: &mut Ctx, scanned: u64, g: u32, lru_pages: u64, kswapd: bool) -> u64 {
        let scanned = if scanned == 0 { SWAP_CLUSTER } else { scanned };
        let mut ret = 0;
        for s in [DENTRY, INODE] {
            let max_pass = self.shrinker_count(s);
            let delta = (4 * scanned / DEFAULT_SEEKS) * max_pass / (lru_pages + 1);
            let mut total = self.slab.deferred[s] + delta;
            if self.era == Era::V31 && delta < max_pass / 4 {
                // 3.1 (Dave Chinner): a small delta scans at most half the cache.
                total = total.min(max_pass / 2);
            }
            total = total.min(2 * max_pass);
            while total >= SHRINK_BATCH {
                let before = self.shrinker_count(s);
                if g & gfp::FS == 0 {
                    break; // the shrinker returns -1
                }
                self.shrinker_scan(ctx, s, SHRINK_BATCH, kswapd);
                let after = self.shrinker_count(s);
                ret += before.saturating_sub(after);
                self.mm.vm.add(Ev::SlabsScanned, SHRINK_BATCH);
                total -= SHRINK_BATCH;
            }
            self.slab.deferred[s] = total;
        }
        ret
    }

    /// What a shrinker reports as its cache size: (unused / 100) * vfs_cache_pressure.
    fn shrinker_count(&self, s: usize) -> u64 {
        let n = if s == DENTRY { self.fs.nr_unused_dentries } else { self.fs.nr_unused_inodes };
        (n / 100) * self.k.vfs_cache_pressure
    }

    fn shrinker_scan(&mut self, ctx: &mut Ctx, s: usize, nr: u64, kswapd: bool) {
        if s == DENTRY {
            self.prune_dcache(ctx, nr);
        } else {
            self.prune_icache(ctx, nr, kswapd);
        }
    }

    /// prune_dcache (__shrink_dcache_sb): from the old end of the dentry LRU,
    /// collect `nr` unreferenced dentries and free them; referenced ones have
    /// DCACHE_REFERENCED cleared and move to the young end without counting.
    fn prune_dcache(&mut self, ctx: &mut Ctx, nr: u64) {
        let mut cnt = nr;
        let mut referenced: Vec<(u32, u32)> = Vec::new();
        let mut victims: Vec<u32> = Vec::new();
        while cnt > 0 {
            let Some((ino, gen)) = self.fs.dentry_lru.pop_front() else { break };
            let i = &mut self.fs.inodes[ino as usize];
            if i.gen != gen || !i.on_dentry_lru {
                continue;
            }
            ctx.sys += self.cost.scan_page_ns;
            if i.dcache_referenced {
                i.dcache_referenced = false;
                referenced.push((ino, gen));
                continue;
            }
            i.on_dentry_lru = false;
            self.fs.nr_unused_dentries -= 1;
            victims.push(ino);
            cnt -= 1;
        }
        self.fs.dentry_lru.extend(referenced);
        for ino in victims {
            let i = &mut self.fs.inodes[ino as usize];
            i.has_dentry = false;
            let obj = i.dentry_obj;
            self.kmem_cache_free(ctx, DENTRY, obj);
            self.iput(ctx, ino);
        }
    }

    /// prune_icache (3.0): look at `nr` inodes from the old end of the LRU.
    /// Held or dirty inodes leave the LRU; referenced ones get another pass;
    /// an inode with pages has them invalidated (the inode steals) and gets
    /// I_REFERENCED back from the iput, so it is freed on a later pass.
    fn prune_icache(&mut self, ctx: &mut Ctx, nr: u64, kswapd: bool) {
        let mut reap = 0;
        let mut scanned = 0;
        while scanned < nr {
            let Some((ino, gen)) = self.fs.inode_lru.pop_front() else { break };
            let i = &self.fs.inodes[ino as usize];
            if i.gen != gen || !i.on_inode_lru {
                continue;
            }
            scanned += 1;
            ctx.sys += self.cost.scan_page_ns;
            if i.i_count > 0 || i.nrdirty > 0 {
                self.fs.inodes[ino as usize].on_inode_lru = false;
                self.fs.nr_unused_inodes -= 1;
                continue;
            }
            if i.i_referenced {
                self.fs.inodes[ino as usize].i_referenced = false;
                self.fs.inode_lru.push_back((ino, gen));
                continue;
            }
            if i.nrpages > 0 {
                reap += self.invalidate_mapping_pages(ctx, ino);
                // iput_final after __iget: I_REFERENCED again; the inode is
                // still at the old end, not the head: "wrong inode", move on.
                self.fs.inodes[ino as usize].i_referenced = true;
                self.fs.inode_lru.push_front((ino, gen));
                continue;
            }
            self.fs.inodes[ino as usize].on_inode_lru = false;
            self.fs.nr_unused_inodes -= 1;
            self.evict_inode(ctx, ino);
        }
        self.mm.vm.add(if kswapd { Ev::KswapdInodesteal } else { Ev::Pginodesteal }, reap);
    }

    /// Free an inode's object and forget it (its file stays on disk).
    fn evict_inode(&mut self, ctx: &mut Ctx, ino: u32) {
        let obj = self.fs.inodes[ino as usize].inode_obj;
        self.kmem_cache_free(ctx, INODE, obj);
        if self.fs.inodes[ino as usize].unlinked {
            self.fs.destroy_inode(ino);
        } else {
            // Cached no more; the file's blocks stay allocated on disk.
            let i = &mut self.fs.inodes[ino as usize];
            i.in_use = false;
        }
    }

    /// iput: drop a reference; the last one puts the inode on the LRU
    /// (iput_final) if it is clean, or frees it if it was unlinked.
    pub fn iput(&mut self, ctx: &mut Ctx, ino: u32) {
        let i = &mut self.fs.inodes[ino as usize];
        i.i_count -= 1;
        if i.i_count > 0 {
            return;
        }
        self.inode_maybe_unused(ino);
        let _ = ctx;
    }

    /// iput_final (3.0): an inode nobody holds gets I_REFERENCED and, if
    /// it is not dirty (pages under writeback are allowed), goes on the
    /// inode LRU. A dirty one joins when the flusher's iput after writing it
    /// finds it clean.
    pub fn inode_maybe_unused(&mut self, ino: u32) {
        let i = &mut self.fs.inodes[ino as usize];
        if i.in_use && i.i_count == 0 && !i.on_inode_lru && i.nrdirty == 0 && !i.unlinked {
            i.on_inode_lru = true;
            i.i_referenced = true;
            let gen = i.gen;
            self.fs.inode_lru.push_back((ino, gen));
            self.fs.nr_unused_inodes += 1;
        }
    }

    /// dput of a file's dentry after close: it stays cached, unused, and
    /// DCACHE_REFERENCED is set on every final put.
    pub fn dput(&mut self, ino: u32) {
        let i = &mut self.fs.inodes[ino as usize];
        if !i.has_dentry {
            return;
        }
        i.dcache_referenced = true;
        if !i.on_dentry_lru {
            i.on_dentry_lru = true;
            let gen = i.gen;
            self.fs.dentry_lru.push_back((ino, gen));
            self.fs.nr_unused_dentries += 1;
        }
    }
}

const SWAP_CLUSTER: u64 = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::TaskKind;
    use crate::vmstat::Ev;
    use serde_json::json;

    /// Node 0 with DMA32 and NORMAL zones of 2048 pages, node 1 with a
    /// NORMAL zone of 4096: little enough low memory that the zonelists
    /// come out in zone order (node 0's: N0 NORMAL, N1 NORMAL, N0 DMA32).
    /// Two CPUs a node, zone_reclaim mode 1, seed 000's zonelist cache
    /// (first-eligible). Node 0's zones named in `drain` are taken below
    /// their min marks (nothing in them is reclaimable), and N0 NORMAL is
    /// marked full in node 0's zonelist cache. Returns the kernel, the user
    /// task's context on CPU 0 and the zone indices (N0 DMA32, N0 NORMAL,
    /// N1 NORMAL).
    fn boot(slab: &str, drain: &[&str]) -> (Kernel, Ctx, [usize; 3]) {
        let spec = json!({
            "machine": {"name": "box", "page_size": 4096, "cache_line": 64, "hz": 250,
                "nodes": [{"cpus": 2, "zones": [{"name": "DMA32", "present_pages": 2048}, {"name": "NORMAL", "present_pages": 2048}], "reserved_pages": 64},
                          {"cpus": 2, "zones": [{"name": "DMA32", "present_pages": 0}, {"name": "NORMAL", "present_pages": 4096}], "reserved_pages": 64}],
                "distance": [[10, 21], [21, 10]],
                "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                         "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80},
                "storage": {"devices": [{"name": "sda", "disks": 1, "bandwidth_mib_s": 100, "access_us": 8000,
                                         "nr_requests": 128, "max_sectors_kib": 512, "size_mib": 10000}],
                            "fs": {"kind": "ext4", "device": 0, "size_mib": 9000}}},
            "kernel": {"name": "k", "era": "3.0", "zlc": "first-eligible", "zone_reclaim_mode": 1, "slab_allocator": slab},
            "workload": {"kind": "fsmark", "threads": 1, "dirs": 1, "subdirs": 2, "files_per_subdir": 10,
                         "files": 1, "iterations": 1, "file_bytes": 4096}});
        let mut k = Kernel::boot(&crate::spec::parse(&spec.to_string()).unwrap()).unwrap();
        let user = k.sched.tasks.iter().position(|t| t.kind == TaskKind::User).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: user, ..Default::default() };
        let find = |k: &Kernel, node: usize, present: u64| {
            (0..k.mm.zones.len()).find(|&z| k.mm.zones[z].node == node && k.mm.zones[z].present == present).unwrap()
        };
        let zs = [find(&k, 0, 2048), 0, find(&k, 1, 4096)];
        let n0_normal = (0..k.mm.zones.len()).find(|&z| k.mm.zones[z].node == 0 && z != zs[0] && k.mm.zones[z].present == 2048).unwrap();
        let zs = [zs[0], n0_normal, zs[2]];
        let zl = &k.mm.zonelists[crate::alloc::gfp_zone(k.era, gfp::GFP_KERNEL)];
        let order: Vec<usize> = zl.zones.iter().map(|&z| z as usize).filter(|&z| k.mm.zones[z].present > 0).collect();
        assert_eq!(order, vec![zs[1], zs[2], zs[0]], "zone order");
        let (c, pos) = (zl.zlc.unwrap(), zl.zlc_pos[0] as usize);
        for (name, zi) in [("DMA32", zs[0]), ("NORMAL", zs[1])] {
            if drain.contains(&name) {
                while k.mm.zone_free_state(zi) >= k.mm.zones[zi].wmark_min {
                    k.mm.buffered_rmqueue(&mut ctx, zi, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
                }
            }
        }
        k.mm.zlc_mark_zone_full(&mut ctx, c, pos);
        k.mm.zlcs[c].last_full_zap = u64::MAX / 2; // no zap during the test
        (k, ctx, zs)
    }

    fn page_of(k: &Kernel, obj: u32) -> &SlabPage {
        &k.slab.caches[DENTRY].pages[(obj / 64) as usize]
    }

    #[test]
    fn slab_keeps_empty_slabs_up_to_free_limit_and_cache_reap_drains_untouched_ones() {
        // Inodes: 1 KiB objects, 4 to a page; enable_cpucache's limit 54,
        // batchcount 27; node 0 has 2 CPUs: free_limit = 3 x 27 + 4 = 85.
        let (mut k, mut ctx, _) = boot("slab", &[]);
        assert_eq!(k.slab.caches[INODE].free_limit[0], 85);
        let objs: Vec<u32> = (0..160).map(|_| k.kmem_cache_alloc(&mut ctx, INODE).ok().unwrap()).collect();
        let pages = k.mm.census.slab;
        assert_eq!(pages, 40);
        // Freed slab by slab: an emptied slab is kept while the node's free
        // objects (its own four included) are at most 85, so 21 are kept
        // and the other 19 go back to the allocator as they empty.
        for &o in &objs {
            k.kmem_cache_free(&mut ctx, INODE, o);
        }
        assert_eq!(k.slab.caches[INODE].free[0].len(), 21);
        assert_eq!(k.slab.caches[INODE].free_objects[0], 84);
        assert_eq!(k.mm.census.slab, 21);
        // The next inode comes from the most recently emptied free slab (no
        // new page) and marks the free list touched.
        let last = *k.slab.caches[INODE].free[0].back().unwrap();
        let o = k.kmem_cache_alloc(&mut ctx, INODE).ok().unwrap();
        assert_eq!(o / 64, last);
        assert_eq!(k.mm.census.slab, 21);
        assert_eq!(k.slab.caches[INODE].free_objects[0], 83);
        // cache_reap: a touched list is only untouched; an untouched one
        // loses its oldest ceil(85 / (5 x 4)) = 5 free slabs.
        k.cache_reap(0, 4_000_000_000);
        assert_eq!((k.slab.caches[INODE].free[0].len(), k.mm.census.slab), (20, 21));
        k.cache_reap(0, 8_000_000_000);
        assert_eq!((k.slab.caches[INODE].free[0].len(), k.mm.census.slab), (15, 16));
        let zs: i64 = k.mm.zones.iter().map(|z| z.vm_stat[Zs::NrSlabReclaimable as usize]).sum();
        assert_eq!(zs, 16);
        // CONFIG_SLUB keeps nothing: every slab goes back as it empties.
        let (mut k, mut ctx, _) = boot("slub", &[]);
        let objs: Vec<u32> = (0..160).map(|_| k.kmem_cache_alloc(&mut ctx, INODE).ok().unwrap()).collect();
        for &o in &objs {
            k.kmem_cache_free(&mut ctx, INODE, o);
        }
        assert_eq!(k.mm.census.slab, 0);
        k.cache_reap(0, 4_000_000_000);
        assert_eq!(k.mm.census.slab, 0);
    }

    #[test]
    fn slab_grows_in_any_zone_of_its_node_before_falling_back() {
        // N0 NORMAL is drained and marked full. CONFIG_SLAB: the
        // GFP_THISNODE walk (node_zonelists[1]: N0 NORMAL, N0 DMA32, no
        // cache) runs zone_reclaim on N0 NORMAL (nothing there: FULL at the
        // gate) and takes the page from N0 DMA32.
        let (mut k, mut ctx, zs) = boot("slab", &["NORMAL"]);
        let obj = k.kmem_cache_alloc(&mut ctx, DENTRY).ok().unwrap();
        assert_eq!(k.mm.zone_of(page_of(&k, obj).pfn), zs[0]);
        assert_eq!(page_of(&k, obj).pnode, 0);
        assert_eq!(k.mm.sim.zone_reclaim_calls, 1);
        assert_eq!(k.mm.sim.zlc_skips, 0);
        // CONFIG_SLUB: the ordinary walk skips N0 NORMAL by the cache
        // without zone_reclaim and takes the page from N1 NORMAL, next in
        // zone order.
        let (mut k, mut ctx, zs) = boot("slub", &["NORMAL"]);
        let obj = k.kmem_cache_alloc(&mut ctx, DENTRY).ok().unwrap();
        assert_eq!(k.mm.zone_of(page_of(&k, obj).pfn), zs[2]);
        assert_eq!(k.mm.sim.zone_reclaim_calls, 0);
        assert_eq!(k.mm.sim.zlc_skips, 1);
    }

    #[test]
    fn slab_falls_back_to_another_nodes_slab_after_two_local_tries() {
        // Both of node 0's zones drained. Each cache_grow walks N0 NORMAL
        // and N0 DMA32 twice (zlc_active is set without a cache behind it,
        // so the closing second scan runs): 4 zone_reclaim calls, FULL at
        // the gate; two tries make 8. Then fallback_alloc: no partial slab
        // anywhere, so a page through the whole allocator, which skips N0
        // NORMAL by the cache and takes N1 NORMAL, next in zone order and
        // above its mark; the slab goes on node 1's list. Nothing woke
        // kswapd.
        let (mut k, mut ctx, zs) = boot("slab", &["NORMAL", "DMA32"]);
        let obj = k.kmem_cache_alloc(&mut ctx, DENTRY).ok().unwrap();
        assert_eq!(k.mm.sim.zone_reclaim_calls, 8);
        assert_eq!(k.mm.sim.zone_reclaim_ret[0], 8, "FULL at the gate");
        assert_eq!(k.mm.zone_of(page_of(&k, obj).pfn), zs[2]);
        assert_eq!(page_of(&k, obj).pnode, 1);
        assert_eq!(k.mm.vm.get(Ev::KswapdWake), 0);
        // The page's other objects come from node 1's list, each after two
        // more local tries; when it is full it leaves node 1's list and the
        // next object needs a new page.
        let per = k.slab.caches[DENTRY].objs_per_page as u64;
        for n in 1..per {
            let o = k.kmem_cache_alloc(&mut ctx, DENTRY).ok().unwrap();
            assert_eq!(o / 64, obj / 64);
            assert_eq!(k.mm.sim.zone_reclaim_calls, 8 * (n + 1));
        }
        assert!(k.slab.caches[DENTRY].partial[1].is_empty());
        assert!(k.slab.caches[DENTRY].partial[0].is_empty());
        let o = k.kmem_cache_alloc(&mut ctx, DENTRY).ok().unwrap();
        assert_ne!(o / 64, obj / 64);
        assert_eq!(page_of(&k, o).pnode, 1);
    }
}
