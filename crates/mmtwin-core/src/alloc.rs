//! The page allocator's entry points: get_page_from_freelist with every
//! form of the zonelist cache, zone_watermark_ok by era, zone_reclaim's
//! early checks, and the __alloc_pages slow path.

use crate::cost::Ctx;
use crate::mm::{Mm, MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE, NR_ZONE_TYPES, ZL_STAT, ZL_WMARK, ZONE_HIGHMEM, ZONE_MOVABLE, ZONE_NORMAL};
use crate::spec::{Era, Zlc};
use crate::vmstat::{Ev, VmStat};

/// GFP bits, 3.1 values (include/linux/gfp.h).
pub mod gfp {
    pub const DMA: u32 = 0x1;
    pub const HIGHMEM: u32 = 0x2;
    pub const DMA32: u32 = 0x4;
    pub const MOVABLE: u32 = 0x8;
    pub const WAIT: u32 = 0x10;
    pub const HIGH: u32 = 0x20;
    pub const IO: u32 = 0x40;
    pub const FS: u32 = 0x80;
    pub const NOWARN: u32 = 0x200;
    pub const NORETRY: u32 = 0x1000;
    pub const ZERO: u32 = 0x8000;
    pub const NOMEMALLOC: u32 = 0x10000;
    pub const HARDWALL: u32 = 0x20000;
    pub const THISNODE: u32 = 0x40000;
    pub const RECLAIMABLE: u32 = 0x80000;

    pub const GFP_KERNEL: u32 = WAIT | IO | FS;
    pub const GFP_USER: u32 = GFP_KERNEL | HARDWALL;
    pub const GFP_HIGHUSER: u32 = GFP_USER | HIGHMEM;
    pub const GFP_HIGHUSER_MOVABLE: u32 = GFP_HIGHUSER | MOVABLE;
    pub const GFP_THISNODE: u32 = THISNODE | NOWARN | NORETRY;
}

/// alloc_flags (mm/internal.h), with the watermark as a separate field.
pub mod af {
    pub const NO_WATERMARKS: u32 = 0x04;
    pub const HARDER: u32 = 0x10;
    pub const HIGH: u32 = 0x20;
    pub const CPUSET: u32 = 0x40;
    pub const WMARK_MIN: u32 = 0x000;
    pub const WMARK_LOW: u32 = 0x100;
    pub const WMARK_HIGH: u32 = 0x200;
    pub const WMARK_MASK: u32 = 0x300;
}

/// What zone_reclaim returned (3.x codes; 2.6.18 returns 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneReclaim {
    NoScan,
    Full,
    Some,
    Success,
}

/// The allocating task as the allocator sees it.
pub struct Task<'a> {
    pub mems_allowed: &'a [bool],
    pub pf_memalloc: bool,
}

/// gfp_zone: the highest zone type a request may use.
pub fn gfp_zone(era: Era, g: u32) -> usize {
    if g & gfp::DMA != 0 {
        0
    } else if g & gfp::DMA32 != 0 {
        1
    } else if g & gfp::HIGHMEM != 0 && g & gfp::MOVABLE != 0 && era != Era::V2618 {
        ZONE_MOVABLE
    } else if g & gfp::HIGHMEM != 0 {
        ZONE_HIGHMEM
    } else {
        ZONE_NORMAL
    }
}

pub fn gfp_migratetype(g: u32) -> usize {
    if g & gfp::MOVABLE != 0 {
        MIGRATE_MOVABLE
    } else if g & gfp::RECLAIMABLE != 0 {
        MIGRATE_RECLAIMABLE
    } else {
        MIGRATE_UNMOVABLE
    }
}

impl Mm {
    /// zone_watermark_ok, as the era computed it.
    pub fn zone_watermark_ok(&self, zi: usize, order: usize, mark: i64, classzone: usize, aflags: u32) -> bool {
        let z = &self.zones[zi];
        let mut min = mark;
        if aflags & af::HIGH != 0 {
            min -= min / 2;
        }
        if aflags & af::HARDER != 0 {
            min -= min / 4;
        }
        let reserve = z.lowmem_reserve[classzone];
        match self.era {
            Era::V2618 | Era::V30 | Era::V31 => {
                let mut free = if self.era == Era::V2618 {
                    z.free_pages - (1i64 << order) + 1
                } else {
                    z.free_pages - (1i64 << order) - 1
                };
                if free <= min + reserve {
                    return false;
                }
                for o in 0..order {
                    free -= (z.nr_free[o] as i64) << o;
                    min >>= 1;
                    if free <= min {
                        return false;
                    }
                }
                true
            }
            Era::V411 => {
                let free = z.free_pages - ((1i64 << order) - 1);
                if free <= min + reserve {
                    return false;
                }
                if order == 0 {
                    return true;
                }
                (order..self.max_order).any(|o| z.nr_free[o] > 0)
            }
        }
    }

    fn mark_for(&self, zi: usize, aflags: u32) -> i64 {
        let z = &self.zones[zi];
        match aflags & af::WMARK_MASK {
            af::WMARK_MIN => z.wmark_min,
            af::WMARK_LOW => z.wmark_low,
            _ => z.wmark_high,
        }
    }

    /// zone_reclaim. Only its early checks can be decided today: the page
    /// cache and slab are not simulated yet, so a zone never has unmapped
    /// file pages above min_unmapped_pages and __zone_reclaim is never
    /// reached. Each check reads the zone's vm_stat and pgdat lines.
    fn zone_reclaim(&mut self, ctx: &mut Ctx, zi: usize, g: u32, task: &Task) -> ZoneReclaim {
        self.sim.zone_reclaim_calls += 1;
        let stat_line = self.zones[zi].line_base + ZL_STAT;
        self.cache.touch(ctx, stat_line);
        let reclaimable_file = self.zone_pagecache_reclaimable(zi);
        let z = &self.zones[zi];
        if reclaimable_file <= z.min_unmapped_pages {
            return ZoneReclaim::Full;
        }
        if z.all_unreclaimable {
            return ZoneReclaim::Full;
        }
        if g & gfp::WAIT == 0 || task.pf_memalloc {
            return ZoneReclaim::NoScan;
        }
        let node = z.node;
        let pgdat_line = self.nodes[node].line_pgdat;
        self.cache.touch(ctx, pgdat_line);
        if !self.nodes[node].cpus.is_empty() && node != ctx.node {
            return ZoneReclaim::NoScan;
        }
        // __zone_reclaim: scanning is not simulated yet, so it reclaims
        // nothing: "scanned, fewer pages than asked" (3.x ZONE_RECLAIM_SOME;
        // 0 in 2.6.18). Unreachable today: see zone_pagecache_reclaimable.
        ZoneReclaim::Some
    }

    /// Unmapped file pages zone_reclaim could free. The page cache is not
    /// simulated yet, so there are none.
    fn zone_pagecache_reclaimable(&self, _zi: usize) -> u64 {
        0
    }

    /// try_to_free_pages: pages reclaimed by direct reclaim. Nothing is
    /// reclaimable yet (anonymous memory without swap, no page cache).
    fn try_to_free_pages(&mut self, _ctx: &mut Ctx, _zl_idx: usize, _g: u32, _order: usize) -> u64 {
        0
    }

    /// zlc_setup: zap the cache once a second; returns nothing (the allowed
    /// mask is the task's mems_allowed, consulted by zlc_zone_worth_trying).
    fn zlc_setup(&mut self, ctx: &mut Ctx, zlc: usize) {
        self.sim.zlc_setups += 1;
        let jiffies = ctx.clock() * self.hz / 1_000_000_000;
        let line = self.zlcs[zlc].line_zap;
        self.cache.touch(ctx, line);
        let z = &mut self.zlcs[zlc];
        if jiffies.saturating_sub(z.last_full_zap) > self.hz {
            z.fullzones.fill(0);
            z.last_full_zap = jiffies;
            let bl = z.line_bitmap;
            self.sim.zlc_zaps += 1;
            self.cache.touch(ctx, bl);
        }
    }

    #[inline]
    fn zlc_worth_trying(&mut self, ctx: &mut Ctx, zlc: usize, pos: usize, task: &Task) -> bool {
        let z = &self.zlcs[zlc];
        let l1 = z.line_z_to_n + pos / z.entries_per_line;
        let l2 = z.line_bitmap;
        let node = z.z_to_n[pos] as usize;
        let full = z.fullzones[pos / 64] & (1u64 << (pos % 64)) != 0;
        self.cache.touch(ctx, l1);
        self.cache.touch(ctx, l2);
        task.mems_allowed[node] && !full
    }

    #[inline]
    fn zlc_mark_zone_full(&mut self, ctx: &mut Ctx, zlc: usize, pos: usize) {
        let z = &mut self.zlcs[zlc];
        z.fullzones[pos / 64] |= 1u64 << (pos % 64);
        let l = z.line_bitmap;
        self.sim.zlc_marked_full += 1;
        self.cache.touch(ctx, l);
    }

    /// zlc_clear_zones_full (zlcreconsider).
    pub fn zlc_clear_zones_full(&mut self, ctx: &mut Ctx, zl_idx: usize) {
        if let Some(zlc) = self.zonelists[zl_idx].zlc {
            self.zlcs[zlc].fullzones.fill(0);
            let l = self.zlcs[zlc].line_bitmap;
            self.cache.touch(ctx, l);
        }
    }

    /// get_page_from_freelist: walk the zonelist for a zone whose watermark
    /// allows the allocation. The zonelist cache variant decides when the
    /// cache is set up, which zones it skips and which it marks full.
    pub fn get_page_from_freelist(
        &mut self,
        ctx: &mut Ctx,
        task: &Task,
        g: u32,
        order: usize,
        zl_idx: usize,
        aflags: u32,
    ) -> Option<(u32, usize)> {
        let zonelists = std::rc::Rc::clone(&self.zonelists);
        let zl = &zonelists[zl_idx];
        if zl.zones.is_empty() {
            return None;
        }
        let first = zl.zones[0] as usize;
        let classzone = self.zones[first].zt;
        let first_node = self.zones[first].node;
        let zlc = if self.zlc_mode == Zlc::None { None } else { zl.zlc };
        let mode = self.zlc_mode;
        let era = self.era;
        let mt = gfp_migratetype(g);
        let mut zlc_active = false;
        let mut did_setup = false;
        loop {
            for i in 0..zl.zones.len() {
                let zi = zl.zones[i] as usize;
                let pos = zl.zlc_pos[i] as usize;
                self.cache.touch(ctx, zl.line_zones + i / zl.ptrs_per_line);
                if zlc_active {
                    if let Some(c) = zlc {
                        if !self.zlc_worth_trying(ctx, c, pos, task) {
                            self.sim.zlc_skips += 1;
                            continue;
                        }
                    }
                }
                let node = self.zones[zi].node;
                if g & gfp::THISNODE != 0 && node != first_node {
                    break;
                }
                // The outcome of this zone: Some(true) = try to allocate,
                // Some(false) = mark full, None = go to the next zone.
                let mut outcome = Some(true);
                if aflags & af::CPUSET != 0 && !task.mems_allowed[node] {
                    self.cache.touch(ctx, self.nodes[node].line_pgdat);
                    outcome = None;
                } else if aflags & af::NO_WATERMARKS == 0 {
                    let mark = self.mark_for(zi, aflags);
                    self.cache.touch(ctx, self.zones[zi].line_base + ZL_WMARK);
                    self.sim.zone_checks += 1;
                    if !self.zone_watermark_ok(zi, order, mark, classzone, aflags) {
                        outcome = match (mode, era) {
                            (Zlc::FirstEligible, _) => {
                                if let (Some(c), false) = (zlc, did_setup) {
                                    self.zlc_setup(ctx, c);
                                    zlc_active = true;
                                    did_setup = true;
                                }
                                if self.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else if zlc_active && !self.zlc_worth_trying(ctx, zlc.unwrap_or(0), pos, task) {
                                    self.sim.zlc_skips += 1;
                                    None
                                } else {
                                    match self.zone_reclaim(ctx, zi, g, task) {
                                        ZoneReclaim::NoScan | ZoneReclaim::Full => None,
                                        _ => Some(self.zone_watermark_ok(zi, order, mark, classzone, aflags)),
                                    }
                                }
                            }
                            (_, Era::V2618) => {
                                // 2.6.18: zone_reclaim returns 1 only when it
                                // freed at least the pages asked for; then the
                                // page is taken without a watermark recheck.
                                if self.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else {
                                    Some(self.zone_reclaim(ctx, zi, g, task) == ZoneReclaim::Success)
                                }
                            }
                            _ => {
                                // 2.6.31 .. 3.0: zone_reclaim return codes.
                                if self.zone_reclaim_mode == 0 {
                                    Some(false)
                                } else {
                                    match self.zone_reclaim(ctx, zi, g, task) {
                                        ZoneReclaim::NoScan => None,
                                        ZoneReclaim::Full => Some(false),
                                        _ => Some(self.zone_watermark_ok(zi, order, mark, classzone, aflags)),
                                    }
                                }
                            }
                        };
                    }
                }
                if outcome == Some(true) {
                    if let Some(p) = self.buffered_rmqueue(ctx, zi, order, mt) {
                        self.zone_statistics(ctx, first, zi, order);
                        return Some((p, zi));
                    }
                    outcome = Some(false);
                }
                if outcome == Some(false) {
                    if let Some(c) = zlc {
                        self.zlc_mark_zone_full(ctx, c, pos);
                    }
                }
                // try_next_zone: the 2006 form sets the cache up after the
                // first zone, whatever happened there; a cpuset-disallowed
                // zone in the baseline just continues.
                if mode == Zlc::AfterFirstZone && !did_setup {
                    if let Some(c) = zlc {
                        self.zlc_setup(ctx, c);
                        zlc_active = true;
                        did_setup = true;
                    }
                }
            }
            if zlc_active {
                // Second scan without the cache, examining every zone.
                zlc_active = false;
                self.sim.second_passes += 1;
                continue;
            }
            return None;
        }
    }

    /// zone_statistics: NUMA hit/miss/foreign/local/other and pgalloc.
    fn zone_statistics(&mut self, ctx: &Ctx, preferred: usize, zi: usize, order: usize) {
        let n = 1u64 << order;
        let zt = self.zones[zi].zt;
        self.vm.add(VmStat::pgalloc_for_zone_type(zt), n);
        self.zones[zi].pgalloc += n;
        let znode = self.zones[zi].node;
        if znode == self.zones[preferred].node {
            self.vm.inc(Ev::NumaHit);
            self.zones[zi].numa[0] += 1;
        } else {
            self.vm.inc(Ev::NumaMiss);
            self.vm.inc(Ev::NumaForeign);
            self.zones[zi].numa[1] += 1;
            self.zones[preferred].numa[2] += 1;
        }
        if znode == ctx.node {
            self.vm.inc(Ev::NumaLocal);
            self.zones[zi].numa[3] += 1;
        } else {
            self.vm.inc(Ev::NumaOther);
            self.zones[zi].numa[4] += 1;
        }
    }

    /// __alloc_pages: fast path at the low watermark, then the slow path:
    /// wake kswapd, retry at min, direct reclaim, OOM.
    pub fn alloc_pages(&mut self, ctx: &mut Ctx, task: &Task, g: u32, order: usize, node: usize) -> Option<(u32, usize)> {
        let hz = gfp_zone(self.era, g).min(NR_ZONE_TYPES - 1);
        let zl_idx = node * NR_ZONE_TYPES + hz;
        let page = self.get_page_from_freelist(ctx, task, g | gfp::HARDWALL, order, zl_idx, af::WMARK_LOW | af::CPUSET);
        if page.is_some() {
            return page;
        }
        if g & gfp::GFP_THISNODE == gfp::GFP_THISNODE {
            return None;
        }
        // wakeup_kswapd for every zone of the zonelist. kswapd itself is
        // not simulated yet: with no page cache and no swap in the
        // simulated workloads it would find nothing to reclaim.
        self.vm.inc(Ev::KswapdWake);
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
        let page = self.get_page_from_freelist(ctx, task, g, order, zl_idx, aflags);
        if page.is_some() {
            return page;
        }
        if task.pf_memalloc && g & gfp::NOMEMALLOC == 0 {
            return self.get_page_from_freelist(ctx, task, g, order, zl_idx, af::NO_WATERMARKS);
        }
        if g & gfp::WAIT == 0 {
            return None;
        }
        self.vm.inc(Ev::Allocstall);
        let progress = self.try_to_free_pages(ctx, zl_idx, g, order);
        if progress > 0 {
            if self.zlc_reconsider {
                self.zlc_clear_zones_full(ctx, zl_idx);
            }
            return self.get_page_from_freelist(ctx, task, g, order, zl_idx, aflags);
        }
        if g & gfp::FS != 0 && g & gfp::NORETRY == 0 {
            let page = self.get_page_from_freelist(ctx, task, g | gfp::HARDWALL, order, zl_idx, af::WMARK_HIGH | af::CPUSET);
            if page.is_some() {
                return page;
            }
        }
        // out_of_memory: the caller records the OOM.
        None
    }
}
