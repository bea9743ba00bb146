//! The page allocator's zonelist walk and slow path (mm/page_alloc.c, part
//! 2): get_page_from_freelist with every form of the zonelist cache and
//! zone_reclaim's return codes, and __alloc_pages_nodemask with the 3.x slow
//! path (wake kswapd, retry at min, direct reclaim, the retry rules, OOM).
//!
//! The slow path is resumable: direct reclaim may sleep (wait_iff_congested,
//! congestion_wait) and the allocation continues where it slept when the
//! task runs again. Its progress lives in the task's `SlowPath`.

use crate::alloc::{af, gfp, gfp_migratetype, gfp_zone, Task, ZoneReclaim};
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::mm::{NR_ZONE_TYPES, ZL_WMARK};
use crate::sched::Next;
use crate::spec::{Era, Zlc};
use crate::trace::{TraceRec, Tp};
use crate::vmscan::DirectReclaim;
use crate::vmstat::{Ev, Zev};

/// The outcome of an allocation attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocRes {
    /// A page (pfn) from zone index `zi`.
    Page(u32, usize),
    /// The task must sleep; call again after it wakes to resume.
    Sleep(Next),
    /// Out of memory: the OOM killer would run.
    Oom,
    /// The allocation fails (no OOM: GFP_THISNODE, !WAIT, NORETRY...).
    Fail,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stage {
    #[default]
    Fresh,
    Rebalance,
    InReclaim,
}

/// Resume state of __alloc_pages_slowpath.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlowPath {
    pub stage: Stage,
    pub pages_reclaimed: u64,
    pub dr: DirectReclaim,
    /// When direct reclaim first found nothing reclaimable anywhere (0: not stuck).
    pub stuck_since: u64,
}

/// How long a caller that may not invoke the OOM killer (no __GFP_FS) keeps
/// retrying while nothing anywhere is reclaimable, before the engine reports
/// it out of memory instead of looping for ever (3.0 would loop until
/// something else freed memory).
pub const STUCK_LIMIT_NS: u64 = 60 * 1_000_000_000;

impl Kernel {
    /// get_page_from_freelist: walk the zonelist for a zone whose watermark
    /// allows the allocation. The zonelist cache variant decides when the
    /// cache is set up, which zones it skips and which it marks full.
    pub fn get_page_from_freelist(&mut self, ctx: &mut Ctx, task: &Task, g: u32, order: usize, zl_idx: usize, aflags: u32) -> Option<(u32, usize)> {
        let zonelists = std::rc::Rc::clone(&self.mm.zonelists);
        let zl = &zonelists[zl_idx];
        if zl.zones.is_empty() {
            return None;
        }
        let first = zl.zones[0] as usize;
        let classzone = self.mm.zones[first].zt;
        let first_node = self.mm.zones[first].node;
        // A __GFP_THISNODE request walks the node's own zonelist
        // (node_zonelists[1]), which has no zonelist cache.
        let zlc = if self.mm.zlc_mode == Zlc::None || g & gfp::THISNODE != 0 { None } else { zl.zlc };
        let mode = self.mm.zlc_mode;
        let era = self.era;
        let mt = gfp_migratetype(g);
        // zlc_active follows the form's rules on any machine of more than
        // one node (nr_online_nodes > 1), with or without a cache behind it:
        // zlc_setup finds none on node_zonelists[1], yet the closing
        // second scan still runs.
        let zlc_possible = mode != Zlc::None && self.mm.nodes.len() > 1;
        let mut zlc_active = false;
        let mut did_setup = false;
        loop {
            for i in 0..zl.zones.len() {
                let zi = zl.zones[i] as usize;
                let pos = zl.zlc_pos[i] as usize;
                let node = self.mm.zones[zi].node;
                if g & gfp::THISNODE != 0 && node != first_node {
                    // node_zonelists[1] holds this node's zones alone, in
                    // the order they have here (zone order interleaves
                    // other nodes' zones between them).
                    continue;
                }
                self.mm.cache.read(ctx, zl.line_zones + i / zl.ptrs_per_line);
                if zlc_active {
                    if let Some(c) = zlc {
                        if !self.mm.zlc_worth_trying(ctx, c, pos, task) {
                            self.mm.sim.zlc_skips += 1;
                            continue;
                        }
                    }
                }
                // The outcome of this zone: Some(true) = try to allocate,
                // Some(false) = mark full, None = go to the next zone.
                let mut outcome = Some(true);
                // cpuset_zone_allowed_softwall lets any __GFP_THISNODE request through.
                if aflags & af::CPUSET != 0 && g & gfp::THISNODE == 0 && !task.mems_allowed[node] {
                    self.mm.cache.read(ctx, self.mm.nodes[node].line_pgdat);
                    outcome = None;
                } else if aflags & af::NO_WATERMARKS == 0 {
                    let mark = self.mm.mark_for(zi, aflags);
                    self.mm.cache.read(ctx, self.mm.zones[zi].line_base + ZL_WMARK);
                    if era != Era::V2618 {
                        // 3.x: NR_FREE_PAGES is a vm_stat item.
                        let l = self.mm.stat_line(zi);
                        self.mm.cache.read(ctx, l);
                    }
                    self.mm.sim.zone_checks += 1;
                    if !self.mm.zone_watermark_ok(zi, order, mark, classzone, aflags) {
                        outcome = match (mode, era) {
                            (Zlc::FirstEligible, _) => {
                                if zlc_possible && !did_setup {
                                    if let Some(c) = zlc {
                                        self.mm.zlc_setup(ctx, c);
                                    }
                                    zlc_active = true;
                                    did_setup = true;
                                }
                                if self.mm.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else if zlc_active && zlc.is_some_and(|c| !self.mm.zlc_worth_trying(ctx, c, pos, task)) {
                                    self.mm.sim.zlc_skips += 1;
                                    None
                                } else {
                                    match self.zone_reclaim(ctx, zi, g, order, task) {
                                        ZoneReclaim::NoScan | ZoneReclaim::Full => None,
                                        _ => Some(self.mm.zone_watermark_ok(zi, order, mark, classzone, aflags)),
                                    }
                                }
                            }
                            (_, Era::V2618) => {
                                // 2.6.18: zone_reclaim returns 1 only when it
                                // freed at least the pages asked for; then the
                                // page is taken without a watermark recheck.
                                if self.mm.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else {
                                    Some(self.zone_reclaim(ctx, zi, g, order, task) == ZoneReclaim::Success)
                                }
                            }
                            _ => {
                                // 2.6.31 .. 3.0: zone_reclaim return codes.
                                if self.mm.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else {
                                    match self.zone_reclaim(ctx, zi, g, order, task) {
                                        ZoneReclaim::NoScan => None,
                                        ZoneReclaim::Full => Some(false),
                                        _ => Some(self.mm.zone_watermark_ok(zi, order, mark, classzone, aflags)),
                                    }
                                }
                            }
                        };
                    }
                }
                if outcome == Some(true) {
                    if let Some(p) = self.mm.buffered_rmqueue(ctx, zi, order, mt) {
                        self.mm.zone_statistics(ctx, first, zi, order);
                        if self.mm.zones[zi].boosted_wmark {
                            // rmqueue's end (5.0 on): the boost just added
                            // wakes kswapd, even where the node meets its marks.
                            self.mm.zones[zi].boosted_wmark = false;
                            let zt = self.mm.zones[zi].zt;
                            self.wakeup_kswapd(ctx, zi, 0, zt, 0);
                        }
                        return Some((p, zi));
                    }
                    outcome = Some(false);
                }
                if outcome == Some(false) {
                    if let Some(c) = zlc {
                        self.mm.zlc_mark_zone_full(ctx, c, pos);
                    }
                }
                // try_next_zone: the 2006 form sets the cache up after the
                // first zone, whatever happened there.
                if mode == Zlc::AfterFirstZone && zlc_possible && !did_setup {
                    if let Some(c) = zlc {
                        self.mm.zlc_setup(ctx, c);
                    }
                    zlc_active = true;
                    did_setup = true;
                }
            }
            if zlc_active {
                // Second scan without the cache, examining every zone.
                zlc_active = false;
                self.mm.sim.second_passes += 1;
                continue;
            }
            return None;
        }
    }

    /// zone_reclaim (3.x return codes; 2.6.18 returns only SOME or SUCCESS).
    pub fn zone_reclaim(&mut self, ctx: &mut Ctx, zi: usize, g: u32, order: usize, task: &Task) -> ZoneReclaim {
        self.mm.sim.zone_reclaim_calls += 1;
        let stat_line = self.mm.stat_line(zi);
        self.mm.cache.read(ctx, stat_line);
        let z = &self.mm.zones[zi];
        let (min_unmapped, min_slab, unreclaimable, node) = (z.min_unmapped_pages, z.min_slab_pages, z.all_unreclaimable, z.node);
        if self.zone_pagecache_reclaimable(zi) <= min_unmapped && self.zone_slab_reclaimable(zi) <= min_slab {
            self.mm.sim.zone_reclaim_ret[0] += 1;
            return ZoneReclaim::Full;
        }
        if unreclaimable {
            self.mm.sim.zone_reclaim_ret[1] += 1;
            return ZoneReclaim::Full;
        }
        if g & gfp::WAIT == 0 || task.pf_memalloc {
            self.mm.sim.zone_reclaim_ret[2] += 1;
            return ZoneReclaim::NoScan;
        }
        let pgdat_line = self.mm.nodes[node].line_pgdat;
        self.mm.cache.read(ctx, pgdat_line);
        if !self.mm.nodes[node].cpus.is_empty() && node != ctx.node {
            self.mm.sim.zone_reclaim_ret[2] += 1;
            return ZoneReclaim::NoScan;
        }
        // ZONE_RECLAIM_LOCKED: held for the whole __zone_reclaim, which
        // runs inside this step; tasks whose steps begin before it ends
        // find the zone locked.
        if ctx.clock() < self.mm.zones[zi].reclaim_locked_until {
            self.mm.sim.zone_reclaim_ret[2] += 1;
            return ZoneReclaim::NoScan;
        }
        let ok = self.__zone_reclaim(ctx, zi, g, order);
        self.mm.zones[zi].reclaim_locked_until = ctx.clock();
        if !ok {
            self.mm.vm.inc(Ev::ZoneReclaimFailed);
            self.mm.sim.zone_reclaim_ret[3] += 1;
            ZoneReclaim::Some
        } else {
            self.mm.sim.zone_reclaim_ret[4] += 1;
            ZoneReclaim::Success
        }
    }

    /// wakeup_kswapd for every zone of the zonelist (3.x slow path entry).
    fn wake_all_kswapd(&mut self, ctx: &mut Ctx, zl_idx: usize, order: usize, g: u32) {
        let zonelists = std::rc::Rc::clone(&self.mm.zonelists);
        let zl = &zonelists[zl_idx];
        let classzone = self.mm.zones[zl.zones[0] as usize].zt;
        for &zi in &zl.zones {
            self.wakeup_kswapd(ctx, zi as usize, order, classzone, g);
        }
    }

    /// The task's suspended allocation is no longer wanted: the page it was
    /// for came in meanwhile (another task's readahead, a partial slab
    /// another task filled). In the kernel nothing overtakes a task inside
    /// try_to_free_pages: its reclaim runs to the end (the allocation then
    /// gets a page the caller frees when it finds the other one). So a task
    /// that slept inside direct reclaim finishes it here, through its
    /// remaining priorities and waits, with mm_vmscan_direct_reclaim_end;
    /// the allocation itself is dropped. Any other retry state is just
    /// forgotten. Err: it sleeps again inside the reclaim (the caller
    /// returns the sleep and comes back here).
    pub fn finish_overtaken_alloc(&mut self, ctx: &mut Ctx) -> Result<(), Next> {
        let pid = ctx.pid as usize;
        let mut sp = self.kt[pid].slow;
        if sp.stage != Stage::InReclaim {
            self.kt[pid].slow = SlowPath::default();
            return Ok(());
        }
        let mems = std::mem::take(&mut self.kt[pid].mems);
        let r = self.direct_reclaim(ctx, &mut sp.dr, &mems);
        self.kt[pid].mems = mems;
        if let Err(next) = r {
            self.kt[pid].slow = sp;
            return Err(next);
        }
        self.kt[pid].slow = SlowPath::default();
        Ok(())
    }

    /// try_to_free_pages as __alloc_pages_direct_reclaim runs it (3.0): under
    /// PF_MEMALLOC, resumable (Err: the task sleeps inside it; the caller
    /// keeps `dr`); when it ends, mm_vmscan_direct_reclaim_end and, after
    /// progress, the zonelist cache's full marks cleared (zlcreconsider).
    fn direct_reclaim(&mut self, ctx: &mut Ctx, dr: &mut DirectReclaim, mems: &[bool]) -> Result<u64, Next> {
        let pid = ctx.pid as usize;
        self.kt[pid].pf_memalloc = true;
        let r = self.do_try_to_free_pages(ctx, dr, mems);
        self.kt[pid].pf_memalloc = false;
        let progress = r?;
        if self.trace.on(Tp::MmVmscanDirectReclaimEnd) {
            self.emit(ctx, &TraceRec::DirectReclaimEnd { nr_reclaimed: progress });
        }
        if progress > 0 && self.mm.zlc_reconsider {
            self.mm.zlc_clear_zones_full(ctx, dr.zl_idx);
        }
        Ok(progress)
    }

    /// Is the task's allocation suspended inside direct reclaim?
    pub fn in_direct_reclaim(&self, pid: u32) -> bool {
        self.kt[pid as usize].slow.stage == Stage::InReclaim
    }

    /// __alloc_pages_nodemask for the task in `ctx`, resumable.
    pub fn alloc_pages(&mut self, ctx: &mut Ctx, g: u32, order: usize, node: usize) -> AllocRes {
        let pid = ctx.pid as usize;
        let hz = gfp_zone(self.era, g).min(NR_ZONE_TYPES - 1);
        let zl_idx = node * NR_ZONE_TYPES + hz;
        let mems = std::mem::take(&mut self.kt[pid].mems);
        let pf_memalloc = self.kt[pid].pf_memalloc;
        let r = self.alloc_pages_inner(ctx, g, order, zl_idx, &mems, pf_memalloc);
        self.kt[pid].mems = mems;
        if !matches!(r, AllocRes::Sleep(_)) {
            self.kt[pid].slow = SlowPath::default();
        }
        r
    }

    fn alloc_pages_inner(&mut self, ctx: &mut Ctx, g: u32, order: usize, zl_idx: usize, mems: &[bool], pf_memalloc: bool) -> AllocRes {
        let pid = ctx.pid as usize;
        let task = Task { mems_allowed: mems, pf_memalloc };
        let mut sp = self.kt[pid].slow;
        if sp.stage == Stage::Fresh {
            if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g | gfp::HARDWALL, order, zl_idx, af::WMARK_LOW | af::CPUSET) {
                return AllocRes::Page(p, zi);
            }
            if g & gfp::GFP_THISNODE == gfp::GFP_THISNODE {
                return AllocRes::Fail;
            }
            self.wake_all_kswapd(ctx, zl_idx, order, g);
            sp.stage = Stage::Rebalance;
        }
        let mut aflags = af::WMARK_MIN;
        if g & gfp::WAIT == 0 {
            aflags |= af::HARDER;
        }
        if g & gfp::HIGH != 0 {
            aflags |= af::HIGH;
        }
        if g & gfp::WAIT != 0 {
            aflags |= af::CPUSET;
        }
        loop {
            match sp.stage {
                Stage::Fresh | Stage::Rebalance => {
                    if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g, order, zl_idx, aflags) {
                        return AllocRes::Page(p, zi);
                    }
                    if pf_memalloc {
                        if g & gfp::NOMEMALLOC == 0 {
                            if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g, order, zl_idx, af::NO_WATERMARKS) {
                                return AllocRes::Page(p, zi);
                            }
                        }
                        return AllocRes::Fail;
                    }
                    if g & gfp::WAIT == 0 {
                        return AllocRes::Fail;
                    }
                    self.mm.vm.inc(Ev::Allocstall);
                    self.mm.vm.zadd(Zev::Allocstall, zl_idx % NR_ZONE_TYPES, 1);
                    if self.trace.on(Tp::MmVmscanDirectReclaimBegin) {
                        let rec = TraceRec::DirectReclaimBegin { order: order as u32, may_writepage: true, gfp_flags: g, classzone_idx: 0 };
                        self.emit(ctx, &rec);
                    }
                    sp.dr = DirectReclaim::start(g, order, zl_idx);
                    sp.stage = Stage::InReclaim;
                }
                Stage::InReclaim => {
                    let progress = match self.direct_reclaim(ctx, &mut sp.dr, mems) {
                        Err(next) => {
                            self.kt[pid].slow = sp;
                            return AllocRes::Sleep(next);
                        }
                        Ok(p) => p,
                    };
                    if progress > 0 {
                        if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g, order, zl_idx, aflags) {
                            return AllocRes::Page(p, zi);
                        }
                        self.drain_all_pages(ctx);
                        if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g, order, zl_idx, aflags) {
                            return AllocRes::Page(p, zi);
                        }
                    } else if g & gfp::FS != 0 && g & gfp::NORETRY == 0 {
                        if let Some((p, zi)) = self.get_page_from_freelist(ctx, &task, g | gfp::HARDWALL, order, zl_idx, af::WMARK_HIGH | af::CPUSET) {
                            return AllocRes::Page(p, zi);
                        }
                        return AllocRes::Oom;
                    }
                    if progress == 0 && g & gfp::NORETRY != 0 {
                        // should_alloc_retry: __GFP_NORETRY never retries.
                        return AllocRes::Fail;
                    }
                    if progress == 0 {
                        // Every allowed zone is all_unreclaimable and the caller
                        // cannot OOM: 3.0 goes round the retry loop (cond_resched
                        // only) until the flusher or kswapd frees something. The
                        // engine waits a jiffy a round, and gives up after
                        // STUCK_LIMIT_NS without any progress.
                        let now = ctx.clock().max(1);
                        if sp.stuck_since == 0 {
                            sp.stuck_since = now;
                        }
                        if now - sp.stuck_since > STUCK_LIMIT_NS {
                            return AllocRes::Oom;
                        }
                        sp.stage = Stage::Rebalance;
                        self.kt[pid].slow = sp;
                        return AllocRes::Sleep(Next::sleep_for(ctx.clock(), self.jiffies_ns(1)));
                    }
                    sp.stuck_since = 0;
                    sp.pages_reclaimed += progress;
                    // should_alloc_retry: order <= PAGE_ALLOC_COSTLY_ORDER always retries.
                    let retry = g & gfp::NORETRY == 0 && (order <= 3 || g & gfp::NOFAIL != 0);
                    if !retry {
                        return AllocRes::Fail;
                    }
                    sp.stage = Stage::Rebalance;
                    let first = self.mm.zonelists[zl_idx].zones[0] as usize;
                    let next = self.wait_iff_congested(ctx, first, self.jiffies_ns(self.hz / 50), true).unwrap_or(Next::Run);
                    // Not congested: wait_iff_congested only does cond_resched(),
                    // which lets kswapd and the flusher run before the retry.
                    self.kt[pid].slow = sp;
                    return AllocRes::Sleep(next);
                }
            }
        }
    }

    /// drain_all_pages: every CPU's per-cpu lists back to the buddy lists.
    pub fn drain_all_pages(&mut self, ctx: &mut Ctx) {
        let nz = self.mm.zones.len();
        let me = ctx.cpu;
        for cpu in 0..self.mm.cpu_node.len() {
            for zi in 0..nz {
                let n = self.mm.pcp[cpu * nz + zi].count;
                if n > 0 {
                    ctx.cpu = cpu;
                    self.mm.free_pcppages_bulk(ctx, zi, n);
                }
            }
        }
        ctx.cpu = me;
    }
}
