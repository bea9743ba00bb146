//! Allocator primitives on the zones (mm/page_alloc.c, part 1): GFP and
//! alloc flags, zone_watermark_ok by era, the zonelist cache's helpers
//! (zlc_setup, zlc_zone_worth_trying, zlc_mark_zone_full,
//! zlc_clear_zones_full) and zone_statistics. The zonelist walk and the slow
//! path, which enter reclaim, are in page_alloc.rs.

use crate::cost::Ctx;
use crate::mm::{Mm, MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE, ZONE_HIGHMEM, ZONE_MOVABLE, ZONE_NORMAL};
use crate::spec::Era;
use crate::vmstat::Zev;

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
    pub const NOFAIL: u32 = 0x800;
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

/// The allocating task as the allocator sees it (`current`).
pub struct Task<'a> {
    pub mems_allowed: &'a [bool],
    /// PF_MEMALLOC: inside reclaim (kswapd, direct reclaim): no recursion into reclaim.
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
    /// zone_watermark_ok, as the era computed it: from 3.0 on with
    /// NR_FREE_PAGES as zone_page_state reads it (the CPUs' unfolded
    /// deltas left out); the allocator's check.
    pub fn zone_watermark_ok(&self, zi: usize, order: usize, mark: i64, classzone: usize, aflags: u32) -> bool {
        let free = if self.vmstat_drift { self.zone_free_state(zi) } else { self.zones[zi].free_pages };
        self.__zone_watermark_ok(zi, order, mark, classzone, aflags, free)
    }

    /// zone_watermark_ok_safe (2.6.36+): below the zone's percpu_drift_mark
    /// the exact count (zone_page_state_snapshot); kswapd's checks.
    pub fn zone_watermark_ok_safe(&self, zi: usize, order: usize, mark: i64, classzone: usize, aflags: u32) -> bool {
        let z = &self.zones[zi];
        let mut free = if self.vmstat_drift { self.zone_free_state(zi) } else { z.free_pages };
        if self.vmstat_drift && z.percpu_drift_mark != 0 && free < z.percpu_drift_mark {
            free = z.free_pages;
        }
        self.__zone_watermark_ok(zi, order, mark, classzone, aflags, free)
    }

    #[allow(non_snake_case)]
    fn __zone_watermark_ok(&self, zi: usize, order: usize, mark: i64, classzone: usize, aflags: u32, free_pages: i64) -> bool {
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
                    free_pages - (1i64 << order) + 1
                } else {
                    free_pages - (1i64 << order) - 1
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
                let free = free_pages - ((1i64 << order) - 1);
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

    pub fn mark_for(&self, zi: usize, aflags: u32) -> i64 {
        let z = &self.zones[zi];
        match aflags & af::WMARK_MASK {
            af::WMARK_MIN => z.wmark_min,
            af::WMARK_LOW => z.wmark_low,
            _ => z.wmark_high,
        }
    }

    /// zlc_setup: zap the cache once a second; returns nothing (the allowed
    /// mask is the task's mems_allowed, consulted by zlc_zone_worth_trying).
    pub fn zlc_setup(&mut self, ctx: &mut Ctx, zlc: usize) {
        self.sim.zlc_setups += 1;
        let jiffies = (ctx.clock() + self.jiffies_phase_ns) * self.hz / 1_000_000_000;
        let line = self.zlcs[zlc].line_zap;
        self.cache.read(ctx, line);
        let z = &mut self.zlcs[zlc];
        if jiffies.saturating_sub(z.last_full_zap) > self.hz {
            z.fullzones.fill(0);
            z.last_full_zap = jiffies;
            let bl = z.line_bitmap;
            self.sim.zlc_zaps += 1;
            // bitmap_zero and the new last_full_zap: two stores.
            self.cache.write(ctx, bl);
            self.cache.write(ctx, line);
        }
    }

    #[inline]
    pub fn zlc_worth_trying(&mut self, ctx: &mut Ctx, zlc: usize, pos: usize, task: &Task) -> bool {
        let z = &self.zlcs[zlc];
        let l1 = z.line_z_to_n + pos / z.entries_per_line;
        let l2 = z.line_bitmap;
        let node = z.z_to_n[pos] as usize;
        let full = z.fullzones[pos / 64] & (1u64 << (pos % 64)) != 0;
        self.cache.read(ctx, l1);
        self.cache.read(ctx, l2);
        task.mems_allowed[node] && !full
    }

    #[inline]
    pub fn zlc_mark_zone_full(&mut self, ctx: &mut Ctx, zlc: usize, pos: usize) {
        let z = &mut self.zlcs[zlc];
        z.fullzones[pos / 64] |= 1u64 << (pos % 64);
        let l = z.line_bitmap;
        self.sim.zlc_marked_full += 1;
        // set_bit: an atomic read-modify-write, whether or not the bit was set.
        self.cache.write(ctx, l);
    }

    /// zlc_clear_zones_full (zlcreconsider).
    pub fn zlc_clear_zones_full(&mut self, ctx: &mut Ctx, zl_idx: usize) {
        if let Some(zlc) = self.zonelists[zl_idx].zlc {
            self.sim.zlc_clears += 1;
            self.zlcs[zlc].fullzones.fill(0);
            let l = self.zlcs[zlc].line_bitmap;
            self.cache.write(ctx, l);
        }
    }

    /// zone_statistics: NUMA hit/miss/foreign/local/other and pgalloc.
    /// The NUMA items are zoned counters (2.6.18 on), with per-cpu deltas
    /// (vmstat.rs `zone_stat_fold`).
    pub fn zone_statistics(&mut self, ctx: &mut Ctx, preferred: usize, zi: usize, order: usize) {
        let n = 1u64 << order;
        let zt = self.zones[zi].zt;
        self.vm.zadd(Zev::Pgalloc, zt, n);
        self.zones[zi].pgalloc += n;
        let znode = self.zones[zi].node;
        if znode == self.zones[preferred].node {
            self.zones[zi].numa[0] += 1;
        } else {
            self.zones[zi].numa[1] += 1;
            self.zones[preferred].numa[2] += 1;
        }
        if znode == ctx.node {
            self.zones[zi].numa[3] += 1;
        } else {
            self.zones[zi].numa[4] += 1;
        }
        self.zone_stat_fold(ctx, zi, crate::vmstat::StatItem::Numa);
        if znode != self.zones[preferred].node {
            self.zone_stat_fold(ctx, preferred, crate::vmstat::StatItem::NumaForeign);
        }
    }
}
