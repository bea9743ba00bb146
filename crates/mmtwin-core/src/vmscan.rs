//! Page reclaim as 3.0/3.1 did it (mm/vmscan.c): isolate_lru_pages,
//! shrink_page_list with each decision of the era, shrink_inactive_list,
//! shrink_active_list with the inactive ratios, get_scan_count with
//! swappiness (and the no-swap case), shrink_zone, shrink_zones,
//! do_try_to_free_pages (resumable across its congestion waits), kswapd's
//! balance_pgdat and its sleep rules, zone_reclaim's __zone_reclaim, and the
//! shrink_slab driver.

use crate::spec::{KswapdBalance, KswapdFsWriteback};
use crate::alloc::{gfp, ZoneReclaim};
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::mm::NR_ZONE_TYPES;
use crate::page::*;
use crate::sched::{Next, Wq};
use crate::trace::{TraceRec, Tp};
use crate::vmstat::*;

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: i32 = 12;
const ZONE_RECLAIM_PRIORITY: i32 = 4;

/// struct scan_control.
#[derive(Debug, Clone, Copy)]
pub struct ScanControl {
    pub gfp: u32,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    pub nr_to_reclaim: u64,
    pub may_writepage: bool,
    pub may_unmap: bool,
    pub may_swap: bool,
    pub order: usize,
    pub kswapd: bool,
    pub swappiness: u64,
}

/// What page_check_references decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageRef {
    Activate,
    Keep,
    Reclaim,
    ReclaimClean,
}

/// Resume state of do_try_to_free_pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectReclaim {
    pub gfp: u32,
    pub order: usize,
    pub zl_idx: usize,
    pub prio: i32,
    pub total_scanned: u64,
    pub nr_reclaimed: u64,
    pub may_writepage: bool,
    /// Woke from patch 6's throttle on the way out with enough reclaimed.
    pub finished: bool,
    /// Woke from patch 6's throttle: the iteration's own wait (3.0's
    /// wait_iff_congested after scanning at priority < DEF_PRIORITY - 2,
    /// with the pages that iteration scanned) comes next.
    pub end_wait_scanned: Option<u64>,
    /// Slept in get_request_wait inside a priority iteration: the zone (an
    /// index into the reclaim zones) it stopped in and what the iteration
    /// had scanned by then.
    pub resume_zone: Option<(usize, u64)>,
}

impl DirectReclaim {
    pub fn start(gfp: u32, order: usize, zl_idx: usize) -> DirectReclaim {
        DirectReclaim {
            gfp,
            order,
            zl_idx,
            prio: DEF_PRIORITY,
            total_scanned: 0,
            nr_reclaimed: 0,
            may_writepage: true,
            finished: false,
            end_wait_scanned: None,
            resume_zone: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KsState {
    /// Asleep until woken (the long sleep).
    Sleeping,
    /// The HZ/10 nap of kswapd_try_to_sleep.
    Napping,
    /// balance_pgdat in progress.
    Balancing,
}

/// Per-node kswapd state (pgdat->kswapd_max_order, classzone_idx, and the
/// resume point of balance_pgdat).
/// shrink_page_list's outcomes, as `sim.shrink_page_list` names them:
/// locked or held by a fault; mapped and zone_reclaim may not unmap; under
/// writeback; activated (referenced again, or no swap slot); kept for
/// another pass (PAGEREF_KEEP); anonymous without __GFP_IO; dirty file
/// page left to the flusher (seed 004's series); dirty and kept
/// (PAGEREF_RECLAIM_CLEAN, no __GFP_FS or may_writepage, congested
/// queue); pageout called (written, or refused by the filesystem); freed.
pub const SPL_OUTCOMES: [&str; 10] =
    ["busy", "mapped", "writeback", "activated", "referenced", "no_io", "left_to_flusher", "dirty_kept", "pageout", "freed"];
const SPL_BUSY: usize = 0;
const SPL_MAPPED: usize = 1;
const SPL_WRITEBACK: usize = 2;
const SPL_ACTIVATED: usize = 3;
const SPL_REFERENCED: usize = 4;
const SPL_NO_IO: usize = 5;
const SPL_LEFT_TO_FLUSHER: usize = 6;
const SPL_DIRTY_KEPT: usize = 7;
const SPL_PAGEOUT: usize = 8;
const SPL_FREED: usize = 9;

pub struct Kswapd {
    pub pid: u32,
    pub state: KsState,
    pub max_order: usize,
    pub classzone_idx: usize,
    pub order: usize,
    pub classzone: usize,
    pub prio: i32,
    pub total_scanned: u64,
    pub nr_reclaimed: u64,
    pub may_writepage: bool,
    pub awake_since: u64,
    /// Woke from patch 6's throttle at the end of a pass: the pass's own
    /// congestion wait (did the pass want it, was a zone below min) comes next.
    pub end_wait: Option<(bool, bool)>,
    /// Slept in get_request_wait or throttle_vm_writeout in this pass:
    /// zones below this index were shrunk already and are not shrunk again
    /// when the pass goes on.
    pub resume_from: usize,
    /// The pass's end_zone and lru_pages, kept when it sleeps midway: 3.0
    /// finds them once a priority, so the pass goes on with them.
    pub resume_end: Option<(usize, u64)>,
    /// balance_pgdat's end_zone as this call's last pass left it (0 when
    /// the call began): a pass that finds nothing to do returns it as the
    /// classzone kswapd sleeps on.
    pub end_zone: usize,
    /// Boosted reclaim (5.0 on): the pages still to reclaim for the boosts
    /// this balance began with (nr_boost_reclaim; 0 once the node was found
    /// short of its marks and reclaim restarted without the boost), and
    /// those boosts per zone of the node (zone_boosts[]), which its end
    /// takes off the zones.
    pub nr_boost_reclaim: u64,
    pub zone_boosts: Vec<i64>,
    /// Per node (4.12 on): balance_pgdat calls in a row that reclaimed
    /// nothing (pgdat->kswapd_failures), and what this call reclaimed.
    pub failures: u32,
    pub call_reclaimed: u64,
}

impl Kswapd {
    pub fn new(pid: u32, nr_zones: usize) -> Kswapd {
        Kswapd {
            pid,
            state: KsState::Sleeping,
            max_order: 0,
            classzone_idx: nr_zones.saturating_sub(1),
            order: 0,
            classzone: nr_zones.saturating_sub(1),
            prio: DEF_PRIORITY,
            total_scanned: 0,
            nr_reclaimed: 0,
            may_writepage: true,
            awake_since: 0,
            end_wait: None,
            resume_from: 0,
            resume_end: None,
            end_zone: 0,
            nr_boost_reclaim: 0,
            zone_boosts: Vec::new(),
            failures: 0,
            call_reclaimed: 0,
        }
    }
}

/// MAX_RECLAIM_RETRIES: balance_pgdat calls without progress after which
/// kswapd leaves a node to direct reclaim (4.12 on).
const MAX_RECLAIM_RETRIES: u32 = 16;

#[inline]
fn is_file_lru(lru: usize) -> bool {
    lru == LRU_INACTIVE_FILE || lru == LRU_ACTIVE_FILE
}

impl Kernel {
    #[inline]
    pub fn zs(&self, zi: usize, item: Zs) -> i64 {
        self.mm.zones[zi].vm_stat[item as usize]
    }
    #[inline]
    pub fn zs_add(&mut self, zi: usize, item: Zs, d: i64) {
        self.mm.zones[zi].vm_stat[item as usize] += d;
    }

    /// zone_reclaimable_pages: file LRU pages, plus anon when swap has room.
    pub fn zone_reclaimable_pages(&self, zi: usize) -> u64 {
        let mut n = self.zs(zi, Zs::NrActiveFile) + self.zs(zi, Zs::NrInactiveFile);
        if self.nr_swap_pages() > 0 {
            n += self.zs(zi, Zs::NrActiveAnon) + self.zs(zi, Zs::NrInactiveAnon);
        }
        n.max(0) as u64
    }

    pub fn zone_reclaimable(&self, zi: usize) -> bool {
        self.mm.zones[zi].pages_scanned < self.zone_reclaimable_pages(zi) * 6
    }

    /// zone_pagecache_reclaimable (3.x): unmapped file pages, less the
    /// dirty ones unless zone_reclaim may write.
    pub fn zone_pagecache_reclaimable(&self, zi: usize) -> u64 {
        let mode = self.mm.zone_reclaim_mode;
        let file_lru = (self.zs(zi, Zs::NrActiveFile) + self.zs(zi, Zs::NrInactiveFile)).max(0) as u64;
        let n = if mode & 4 != 0 {
            self.zs(zi, Zs::NrFilePages).max(0) as u64
        } else {
            file_lru.saturating_sub(self.zs(zi, Zs::NrFileMapped).max(0) as u64)
        };
        let delta = if mode & 2 != 0 { 0 } else { self.zs(zi, Zs::NrFileDirty).max(0) as u64 };
        n.saturating_sub(delta.min(n))
    }

    pub fn zone_slab_reclaimable(&self, zi: usize) -> u64 {
        self.zs(zi, Zs::NrSlabReclaimable).max(0) as u64
    }

    pub fn emit(&mut self, ctx: &Ctx, rec: &TraceRec) {
        let t = &self.sched.tasks[ctx.pid as usize];
        self.trace.emit(ctx.clock(), &t.comm, t.pid, ctx.cpu as u32, rec);
    }

    /// isolate_lru_pages: take up to `nr` pages from the tail of `lru` of
    /// zone `zi` onto `dst`. Returns (scanned, taken).
    fn isolate_lru_pages(&mut self, ctx: &mut Ctx, zi: usize, lru: usize, nr: u64, dst: &mut ListHead) -> (u64, u64) {
        let mut scanned = 0;
        let mut taken = 0;
        while scanned < nr {
            let z = &mut self.mm.zones[zi];
            let Some(p) = self.mm.pages.pop_back(&mut z.lru[lru]) else { break };
            scanned += 1;
            let f = &mut self.mm.pages.flags[p as usize];
            *f = (*f & !PG_LRU) | PG_ISOLATED;
            self.mm.pages.push_front(dst, p);
            taken += 1;
        }
        // The page's examination is charged once, in shrink_page_list or
        // shrink_active_list (scan_page_ns covers lock, flags, references, rmap).
        self.mm.sim.page_events += taken;
        self.zs_add(zi, lru_stat(lru), -(taken as i64));
        let iso = if is_file_lru(lru) { Zs::NrIsolatedFile } else { Zs::NrIsolatedAnon };
        self.zs_add(zi, iso, taken as i64);
        self.mm.census.lru -= taken;
        self.mm.census.isolated += taken;
        if self.trace.on(Tp::MmVmscanLruIsolate) {
            let rec = TraceRec::LruIsolate {
                isolate_mode: if lru == LRU_ACTIVE_FILE || lru == LRU_ACTIVE_ANON { 1 } else { 0 },
                classzone_idx: self.mm.zones[zi].zt as u32,
                order: 0,
                nr_requested: nr,
                nr_scanned: scanned,
                nr_skipped: 0,
                nr_taken: taken,
                contig_taken: 0,
                contig_dirty: 0,
                contig_failed: 0,
                lru: lru as u32,
            };
            self.emit(ctx, &rec);
        }
        (scanned, taken)
    }

    /// putback_lru_pages: each isolated page back to the head of its list,
    /// the oldest first (lru_to_page takes the list's tail), so the pages
    /// keep their order on the LRU.
    fn putback_lru_pages(&mut self, ctx: &mut Ctx, zi: usize, list: &mut ListHead) {
        while let Some(p) = self.mm.pages.pop_back(list) {
            let f = self.mm.pages.flags[p as usize];
            let file = f & PG_SWAPBACKED == 0;
            let active = f & PG_ACTIVE != 0;
            let lru = if f & PG_UNEVICTABLE != 0 {
                LRU_UNEVICTABLE
            } else {
                (if file { LRU_INACTIVE_FILE } else { LRU_INACTIVE_ANON }) + active as usize
            };
            self.mm.pages.flags[p as usize] = (f & !PG_ISOLATED) | PG_LRU;
            let z = &mut self.mm.zones[zi];
            self.mm.pages.push_front(&mut z.lru[lru], p);
            z.vm_stat[lru_stat(lru) as usize] += 1;
            z.vm_stat[if file { Zs::NrIsolatedFile } else { Zs::NrIsolatedAnon } as usize] -= 1;
            if active {
                z.recent_rotated[file as usize] += 1;
            }
            self.mm.census.isolated -= 1;
            self.mm.census.lru += 1;
            self.mm.sim.page_events += 1;
        }
        let _ = ctx;
    }

    /// page_check_references (3.0).
    fn page_check_references(&mut self, p: u32) -> PageRef {
        let young = self.mm.pages.test(p, PG_MAPPED) && self.mm.pages.test_clear(p, PG_YOUNG);
        let referenced_page = self.mm.pages.test_clear(p, PG_REFERENCED);
        let f = self.mm.pages.flags[p as usize];
        if young {
            // To 5.8 a referenced anonymous page is activated at once; 5.9
            // ("protect the workingset on anonymous LRU") gives it the file
            // pages' second trip around the inactive list.
            if f & PG_ANON != 0 && self.k.new_anon_lru == crate::spec::NewAnonLru::Active {
                return PageRef::Activate;
            }
            self.mm.pages.set(p, PG_REFERENCED);
            if referenced_page {
                return PageRef::Activate;
            }
            return PageRef::Keep;
        }
        if referenced_page && f & PG_SWAPBACKED == 0 {
            return PageRef::ReclaimClean;
        }
        PageRef::Reclaim
    }

    /// shrink_page_list: decide each isolated page's fate. Freed pages leave
    /// `list`; kept and activated ones stay on it for putback. Returns
    /// (reclaimed, nr_dirty, nr_writeback, nr_congested).
    fn shrink_page_list(&mut self, ctx: &mut Ctx, zi: usize, list: &mut ListHead, sc: &mut ScanControl, prio: i32) -> (u64, u64, u64, u64) {
        let mut keep = ListHead::default();
        let (mut reclaimed, mut nr_dirty, mut nr_writeback, mut nr_congested) = (0u64, 0u64, 0u64, 0u64);
        let may_enter_fs = sc.gfp & gfp::FS != 0;
        let who = 2 * sc.kswapd as usize;
        // The oldest page first: isolate_lru_pages put the pages it took
        // from the LRU's tail at the batch's head, one after another, so the
        // batch's tail is the oldest (lru_to_page(page_list)). Kept pages go
        // to the head of `keep`, which ends youngest first at its head.
        while let Some(p) = self.mm.pages.pop_back(list) {
            ctx.sys += self.cost.scan_page_ns;
            self.mm.sim.page_events += 1;
            let f = self.mm.pages.flags[p as usize];
            let spl = &mut self.mm.sim.spl[who + (f & PG_SWAPBACKED != 0) as usize];
            if f & (PG_LOCKED | PG_FAULTREF) != 0 {
                spl[SPL_BUSY] += 1;
                self.mm.pages.push_front(&mut keep, p);
                continue;
            }
            sc.nr_scanned += 1;
            if f & PG_MAPPED != 0 && !sc.may_unmap {
                spl[SPL_MAPPED] += 1;
                self.mm.pages.push_front(&mut keep, p);
                continue;
            }
            if f & PG_MAPPED != 0 {
                // Double the slab pressure for mapped pages.
                sc.nr_scanned += 1;
            }
            if f & PG_WRITEBACK != 0 {
                nr_writeback += 1;
                spl[SPL_WRITEBACK] += 1;
                self.mm.pages.push_front(&mut keep, p);
                continue;
            }
            let o = who + (f & PG_SWAPBACKED != 0) as usize;
            let refs = self.page_check_references(p);
            match refs {
                PageRef::Activate => {
                    self.mm.sim.spl[o][SPL_ACTIVATED] += 1;
                    self.activate_locked(p);
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                PageRef::Keep => {
                    self.mm.sim.spl[o][SPL_REFERENCED] += 1;
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                _ => {}
            }
            let f = self.mm.pages.flags[p as usize];
            let mut may_enter_fs = may_enter_fs;
            if f & PG_ANON != 0 && f & PG_SWAPCACHE == 0 {
                // add_to_swap: a slot and the swap cache, or activate when
                // there is no swap or it is full.
                if sc.gfp & gfp::IO == 0 {
                    self.mm.sim.spl[o][SPL_NO_IO] += 1;
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                if !self.add_to_swap(p) {
                    self.mm.sim.spl[o][SPL_ACTIVATED] += 1;
                    self.activate_locked(p);
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                may_enter_fs = true;
            }
            if f & PG_SWAPCACHE != 0 && sc.gfp & gfp::IO != 0 {
                may_enter_fs = true;
            }
            if f & PG_MAPPED != 0 {
                // try_to_unmap: the young bit was cleared above, so it succeeds.
                self.page_remove_rmap(ctx, p);
            }
            if self.mm.pages.test(p, PG_DIRTY) {
                nr_dirty += 1;
                if self.mm.pages.test(p, PG_FILE) && !self.may_write_file_page(ctx, prio) {
                    // The series (seed 004): leave file pages to the flusher.
                    self.mm.sim.spl[o][SPL_LEFT_TO_FLUSHER] += 1;
                    if self.k.reclaim_invalidate {
                        self.zs_add(zi, Zs::NrVmscanImmediate, 1);
                        self.mm.pages.set(p, PG_RECLAIM);
                    }
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                if refs == PageRef::ReclaimClean || !may_enter_fs || !sc.may_writepage {
                    self.mm.sim.spl[o][SPL_DIRTY_KEPT] += 1;
                    self.mm.pages.push_front(&mut keep, p);
                    continue;
                }
                let out = self.pageout(ctx, p, sc);
                self.mm.sim.spl[o][if out == Pageout::Keep { SPL_DIRTY_KEPT } else { SPL_PAGEOUT }] += 1;
                match out {
                    Pageout::Keep => {
                        nr_congested += 1;
                        self.mm.pages.push_front(&mut keep, p);
                        continue;
                    }
                    Pageout::Activate => {
                        self.activate_locked(p);
                        self.mm.pages.push_front(&mut keep, p);
                        continue;
                    }
                    Pageout::Success => {
                        if self.mm.pages.test(p, PG_WRITEBACK) || self.mm.pages.test(p, PG_DIRTY) {
                            self.mm.pages.push_front(&mut keep, p);
                            continue;
                        }
                    }
                }
            }
            // __remove_mapping and free.
            let file = self.mm.pages.flags[p as usize] & PG_SWAPBACKED == 0;
            self.zs_add(zi, if file { Zs::NrIsolatedFile } else { Zs::NrIsolatedAnon }, -1);
            self.mm.census.isolated -= 1;
            if self.mm.pages.test(p, PG_SWAPCACHE) {
                self.delete_from_swap_cache(p);
            } else {
                if self.mm.pages.test(p, crate::page::PG_RA_UNUSED) {
                    self.mm.sim.ra_unused_reclaimed += 1;
                }
                if self.mm.pages.test(p, crate::page::PG_RA_HOLE) {
                    self.mm.sim.ra_holes_reclaimed += 1;
                }
                self.delete_from_page_cache(ctx, p);
            }
            self.mm.pages.flags[p as usize] = 0;
            self.mm.free_pages(ctx, p, 0);
            self.mm.sim.spl[o][SPL_FREED] += 1;
            reclaimed += 1;
        }
        *list = keep;
        if nr_dirty > 0 && nr_dirty == nr_congested {
            self.mm.zones[zi].congested = true;
        }
        (reclaimed, nr_dirty, nr_writeback, nr_congested)
    }

    fn activate_locked(&mut self, p: u32) {
        self.mm.pages.set(p, PG_ACTIVE);
        self.mm.vm.inc(Ev::Pgactivate);
    }

    /// shrink_inactive_list.
    fn shrink_inactive_list(&mut self, ctx: &mut Ctx, zi: usize, nr_to_scan: u64, sc: &mut ScanControl, prio: i32, file: bool) -> u64 {
        self.lru_add_drain(ctx);
        let lru = if file { LRU_INACTIVE_FILE } else { LRU_INACTIVE_ANON };
        let mut list = ListHead::default();
        let (scanned, taken) = self.isolate_lru_pages(ctx, zi, lru, nr_to_scan, &mut list);
        let zt = self.mm.zones[zi].zt;
        self.mm.zones[zi].pages_scanned += scanned;
        self.mm.vm.zadd(if sc.kswapd { Zev::PgscanKswapd } else { Zev::PgscanDirect }, zt, scanned);
        if taken == 0 {
            return 0;
        }
        self.mm.zones[zi].recent_scanned[file as usize] += taken;
        let (reclaimed, nr_dirty, ..) = self.shrink_page_list(ctx, zi, &mut list, sc, prio);
        if sc.kswapd {
            self.mm.vm.add(Ev::KswapdSteal, reclaimed);
            self.mm.vm.zadd(Zev::PgstealKswapd, zt, reclaimed);
        } else {
            self.mm.vm.zadd(Zev::PgstealDirect, zt, reclaimed);
        }
        self.putback_lru_pages(ctx, zi, &mut list);
        // Patch 6 (v2 counts the dirty pages met): throttle when they are
        // at least nr_taken >> (DEF_PRIORITY - priority).
        if self.k.reclaim_throttle_dirty && nr_dirty > 0 && nr_dirty >= taken >> (DEF_PRIORITY - prio) {
            self.kt[ctx.pid as usize].throttle = Some(zi);
        }
        if self.trace.on(Tp::MmVmscanLruShrinkInactive) {
            let rec = TraceRec::LruShrinkInactive {
                nid: self.mm.zones[zi].node as u32,
                zid: zt as u32,
                nr_scanned: scanned,
                nr_reclaimed: reclaimed,
                priority: prio,
                file,
                anon: !file,
                sync: false,
                nr_dirty: 0,
                nr_writeback: 0,
                nr_congested: 0,
                nr_immediate: 0,
                nr_activate: 0,
                nr_ref_keep: 0,
                nr_unmap_fail: 0,
            };
            self.emit(ctx, &rec);
        }
        reclaimed
    }

    /// May this reclaimer write a dirty file page (the series' patches 1, 5
    /// and 8)? Anonymous pages are not asked.
    fn may_write_file_page(&self, ctx: &Ctx, prio: i32) -> bool {
        if !self.kt[ctx.pid as usize].kswapd {
            return self.k.direct_fs_writeback;
        }
        match self.k.kswapd_fs_writeback {
            KswapdFsWriteback::Always => true,
            KswapdFsWriteback::HighPriority => prio < DEF_PRIORITY - 2,
            KswapdFsWriteback::Never => false,
        }
    }

    /// do_try_to_free_pages' nap after a priority iteration that scanned at
    /// priority < DEF_PRIORITY - 2: wait_iff_congested(HZ/10) on the first zone.
    fn end_of_iteration_wait(&mut self, ctx: &mut Ctx, zones: &[usize], scanned: u64, prio: i32) -> Option<Next> {
        if scanned == 0 || prio >= DEF_PRIORITY - 2 {
            return None;
        }
        let first = *zones.first()?;
        let timeout = self.jiffies_ns(self.hz / 10);
        self.wait_iff_congested(ctx, first, timeout, false)
    }

    /// The throttle patch 6 asked for in shrink_inactive_list, taken at the
    /// reclaimer's next point that can sleep: wait_iff_congested(HZ/10).
    fn take_throttle(&mut self, ctx: &mut Ctx) -> Option<Next> {
        if let Some(next) = self.take_request_wait(ctx) {
            return Some(next);
        }
        let zi = self.kt[ctx.pid as usize].throttle.take()?;
        let timeout = self.jiffies_ns(self.hz / 10);
        self.wait_iff_congested(ctx, zi, timeout, false)
    }

    /// get_request_wait for the writes of this reclaimer that a request
    /// list refused: 3.0 sleeps before each; the engine stops scanning
    /// after the batch that met the refusal (shrink_zone) and sleeps once,
    /// on the list that refused the first, then submits them all when
    /// woken, a batcher (submit_pending_writes). Taken before a throttle
    /// patch 6 asked for, which then waits for the next point that can sleep.
    fn take_request_wait(&mut self, ctx: &mut Ctx) -> Option<Next> {
        let pid = ctx.pid;
        if !std::mem::take(&mut self.kt[pid as usize].request_wait) {
            return None;
        }
        if !self.pending_writes.iter().any(|w| w.pid == pid) {
            return None;
        }
        Some(self.request_wait_sleep(ctx))
    }

    /// shrink_active_list: deactivate pages from the active list's tail.
    fn shrink_active_list(&mut self, ctx: &mut Ctx, zi: usize, nr: u64, sc: &ScanControl, file: bool) {
        self.lru_add_drain(ctx);
        let lru = if file { LRU_ACTIVE_FILE } else { LRU_ACTIVE_ANON };
        let mut list = ListHead::default();
        let (scanned, taken) = self.isolate_lru_pages(ctx, zi, lru, nr, &mut list);
        let zt = self.mm.zones[zi].zt;
        // Global reclaim: zone->pages_scanned counts active scans too.
        self.mm.zones[zi].pages_scanned += scanned;
        let _ = sc;
        self.mm.vm.zadd(Zev::Pgrefill, zt, scanned);
        self.mm.zones[zi].recent_scanned[file as usize] += taken;
        let mut rotated = 0;
        let mut deactivated = 0;
        let inactive = lru - 1;
        // The oldest page first (as shrink_page_list), each put at the head
        // of the inactive list: 3.0 collects them on l_inactive and
        // move_active_pages_to_lru moves them from its tail, with the same
        // order as the result.
        while let Some(p) = self.mm.pages.pop_back(&mut list) {
            ctx.sys += self.cost.scan_page_ns;
            self.mm.sim.page_events += 1;
            if self.mm.pages.test(p, PG_MAPPED) && self.mm.pages.test_clear(p, PG_YOUNG) {
                rotated += 1;
            }
            let f = self.mm.pages.flags[p as usize];
            self.mm.pages.flags[p as usize] = (f & !(PG_ACTIVE | PG_ISOLATED)) | PG_LRU;
            let z = &mut self.mm.zones[zi];
            self.mm.pages.push_front(&mut z.lru[inactive], p);
            z.vm_stat[lru_stat(inactive) as usize] += 1;
            z.vm_stat[if file { Zs::NrIsolatedFile } else { Zs::NrIsolatedAnon } as usize] -= 1;
            self.mm.census.isolated -= 1;
            self.mm.census.lru += 1;
            deactivated += 1;
        }
        self.mm.zones[zi].recent_rotated[file as usize] += rotated;
        self.mm.vm.add(Ev::Pgdeactivate, deactivated);
    }

    fn inactive_anon_is_low(&self, zi: usize) -> bool {
        if self.nr_swap_pages() <= 0 {
            return false;
        }
        let z = &self.mm.zones[zi];
        (self.zs(zi, Zs::NrInactiveAnon) as u64) * z.inactive_ratio < self.zs(zi, Zs::NrActiveAnon) as u64
    }

    fn inactive_file_is_low(&self, zi: usize) -> bool {
        self.zs(zi, Zs::NrActiveFile) > self.zs(zi, Zs::NrInactiveFile)
    }

    /// get_scan_count (3.0): how many pages of each evictable list to scan.
    fn get_scan_count(&mut self, zi: usize, sc: &ScanControl, prio: i32) -> [u64; 4] {
        let size = |l: usize| self.zs(zi, lru_stat(l)).max(0) as u64;
        // force_scan: kswapd scans at least SWAP_CLUSTER_MAX. 3.0 only when
        // the zone's LRU pages >> priority fall below it, and after the
        // fraction; 3.1 always, before it.
        let lru_total: u64 = (0..4).map(size).sum();
        let force_scan = sc.kswapd && (self.era == crate::spec::Era::V31 || (lru_total >> prio) < SWAP_CLUSTER_MAX);
        let (fraction, denominator, noswap) = if !sc.may_swap || self.nr_swap_pages() <= 0 {
            ([0u64, 1u64], 1u64, true)
        } else {
            let anon = size(LRU_ACTIVE_ANON) + size(LRU_INACTIVE_ANON);
            let file = size(LRU_ACTIVE_FILE) + size(LRU_INACTIVE_FILE);
            let free = self.mm.zones[zi].free_pages.max(0) as u64;
            if file + free <= self.mm.zones[zi].wmark_high.max(0) as u64 {
                ([1, 0], 1, false)
            } else {
                let anon_prio = sc.swappiness;
                let file_prio = 200 - sc.swappiness;
                let z = &mut self.mm.zones[zi];
                if z.recent_scanned[0] > anon / 4 {
                    z.recent_scanned[0] /= 2;
                    z.recent_rotated[0] /= 2;
                }
                if z.recent_scanned[1] > file / 4 {
                    z.recent_scanned[1] /= 2;
                    z.recent_rotated[1] /= 2;
                }
                let ap = (anon_prio + 1) * (z.recent_scanned[0] + 1) / (z.recent_rotated[0] + 1);
                let fp = (file_prio + 1) * (z.recent_scanned[1] + 1) / (z.recent_rotated[1] + 1);
                ([ap, fp], ap + fp + 1, false)
            }
        };
        let mut nr = [0u64; 4];
        for (l, slot) in nr.iter_mut().enumerate() {
            let file = is_file_lru(l) as usize;
            let mut scan = self.zs(zi, lru_stat(l)).max(0) as u64;
            if self.era == crate::spec::Era::V31 {
                // 3.1: the forced batch before the anon/file fraction.
                if prio > 0 || noswap {
                    scan >>= prio;
                    if scan == 0 && force_scan {
                        scan = SWAP_CLUSTER_MAX;
                    }
                    scan = scan * fraction[file] / denominator;
                }
            } else {
                // 3.0: the fraction first; a list left with nothing gets the
                // forced batch whatever its fraction (anon only with swap),
                // at priority 0 too.
                if prio > 0 || noswap {
                    scan >>= prio;
                    scan = scan * fraction[file] / denominator;
                }
                if scan == 0 && force_scan && (file == 1 || !noswap) {
                    scan = SWAP_CLUSTER_MAX;
                }
            }
            *slot = scan;
        }
        nr
    }

    /// shrink_zone (3.0).
    pub fn shrink_zone(&mut self, ctx: &mut Ctx, prio: i32, zi: usize, sc: &mut ScanControl) {
        let pid = ctx.pid as usize;
        // Resumed after a request wait: `done` pages this call reclaimed
        // before it are in sc.nr_reclaimed already; they count toward the
        // target here, and only what follows is added.
        let (mut nr, mut nr_reclaimed) = match self.kt[pid].zone_resume.take() {
            Some((z, p, nr, done)) if z == zi && p == prio => (nr, done),
            _ => (self.get_scan_count(zi, sc, prio), 0),
        };
        let counted = nr_reclaimed;
        while nr[LRU_INACTIVE_ANON] > 0 || nr[LRU_ACTIVE_FILE] > 0 || nr[LRU_INACTIVE_FILE] > 0 {
            for (l, left) in nr.iter_mut().enumerate() {
                if *left > 0 {
                    let k = (*left).min(SWAP_CLUSTER_MAX);
                    *left -= k;
                    nr_reclaimed += self.shrink_list(ctx, l, k, zi, sc, prio);
                    if self.kt[pid].request_wait {
                        // The other lists' batches of this round wait too.
                        break;
                    }
                }
            }
            if nr_reclaimed >= sc.nr_to_reclaim && prio < DEF_PRIORITY {
                break;
            }
            // A write met a queue with no free request: 3.0 sleeps in
            // get_request_wait there and goes on. The reclaimer stops after
            // this batch, sleeps at its next point that can
            // (take_request_wait), and then goes on with what is left.
            if self.kt[pid].request_wait {
                if nr[LRU_INACTIVE_ANON] > 0 || nr[LRU_ACTIVE_FILE] > 0 || nr[LRU_INACTIVE_FILE] > 0 {
                    self.kt[pid].zone_resume = Some((zi, prio, nr, nr_reclaimed));
                    sc.nr_reclaimed += nr_reclaimed - counted;
                    return;
                }
                break;
            }
        }
        sc.nr_reclaimed += nr_reclaimed - counted;
        if self.inactive_anon_is_low(zi) {
            self.shrink_active_list(ctx, zi, SWAP_CLUSTER_MAX, sc, false);
        }
        if matches!(self.era, crate::spec::Era::V30 | crate::spec::Era::V31) && self.vm_writeout_over() {
            self.kt[pid].vm_throttle = 1;
        }
    }

    /// throttle_vm_writeout's test: NR_WRITEBACK (+ NR_UNSTABLE_NFS, none
    /// here) above the dirty threshold plus a tenth.
    fn vm_writeout_over(&self) -> bool {
        let (_, thresh) = self.global_dirty_limits();
        let (_, wb) = self.global_dirty();
        wb.max(0) as u64 > thresh + thresh / 10
    }

    /// throttle_vm_writeout at the reclaimer's next point that can sleep:
    /// congestion_wait(HZ/10) while pages under writeback stay over the
    /// mark; after the first wait, only for an allocation with __GFP_FS and
    /// __GFP_IO (the others may hold locks the writeback needs).
    fn take_vm_throttle(&mut self, ctx: &mut Ctx, g: u32) -> Option<Next> {
        let pid = ctx.pid as usize;
        match self.kt[pid].vm_throttle {
            0 => None,
            1 => {
                self.kt[pid].vm_throttle = if g & (gfp::FS | gfp::IO) == gfp::FS | gfp::IO { 2 } else { 0 };
                Some(self.congestion_wait(ctx, self.jiffies_ns(self.hz / 10)))
            }
            _ => {
                if self.vm_writeout_over() {
                    Some(self.congestion_wait(ctx, self.jiffies_ns(self.hz / 10)))
                } else {
                    self.kt[pid].vm_throttle = 0;
                    None
                }
            }
        }
    }

    fn shrink_list(&mut self, ctx: &mut Ctx, l: usize, nr: u64, zi: usize, sc: &mut ScanControl, prio: i32) -> u64 {
        let file = is_file_lru(l);
        if l == LRU_ACTIVE_FILE || l == LRU_ACTIVE_ANON {
            let low = if file { self.inactive_file_is_low(zi) } else { self.inactive_anon_is_low(zi) };
            if low {
                self.shrink_active_list(ctx, zi, nr, sc, file);
            }
            return 0;
        }
        self.shrink_inactive_list(ctx, zi, nr, sc, prio, file)
    }

    /// The zones of a zonelist a direct reclaimer may scan (gfp_zone, cpuset).
    fn reclaim_zones(&self, zl_idx: usize, mems: &[bool]) -> Vec<usize> {
        self.mm.zonelists[zl_idx].zones.iter().map(|&z| z as usize).filter(|&zi| mems[self.mm.zones[zi].node]).collect()
    }

    /// do_try_to_free_pages (3.0). Ok(progress) when done; Err(next) when
    /// the reclaimer sleeps in wait_iff_congested (resumes at dr.prio).
    pub fn do_try_to_free_pages(&mut self, ctx: &mut Ctx, dr: &mut DirectReclaim, mems: &[bool]) -> Result<u64, Next> {
        let zones = self.reclaim_zones(dr.zl_idx, mems);
        if dr.finished {
            return Ok(dr.nr_reclaimed);
        }
        if let Some(scanned) = dr.end_wait_scanned.take() {
            if let Some(next) = self.end_of_iteration_wait(ctx, &zones, scanned, dr.prio + 1) {
                return Err(next);
            }
        }
        if let Some(next) = self.take_vm_throttle(ctx, dr.gfp) {
            return Err(next);
        }
        while dr.prio >= 0 {
            let prio = dr.prio;
            let (first_zone, scanned_before) = dr.resume_zone.take().unwrap_or((0, 0));
            let mut sc = ScanControl {
                gfp: dr.gfp,
                nr_scanned: scanned_before,
                nr_reclaimed: dr.nr_reclaimed,
                nr_to_reclaim: SWAP_CLUSTER_MAX,
                may_writepage: dr.may_writepage,
                may_unmap: true,
                may_swap: true,
                order: dr.order,
                kswapd: false,
                swappiness: self.k.swappiness,
            };
            // shrink_zones
            for (j, &zi) in zones.iter().enumerate().skip(first_zone) {
                if self.mm.zones[zi].present == 0 {
                    continue;
                }
                if self.mm.zones[zi].all_unreclaimable && prio != DEF_PRIORITY {
                    continue;
                }
                let before = sc.nr_reclaimed;
                self.shrink_zone(ctx, prio, zi, &mut sc);
                if sc.nr_reclaimed > before {
                    // Progress on the node makes it worth kswapd's while again.
                    let n = self.mm.zones[zi].node;
                    self.kswapd[n].failures = 0;
                }
                if self.kt[ctx.pid as usize].request_wait {
                    // Sleep in get_request_wait (the queue has no free
                    // request) and go on from here: this zone if its scan
                    // was cut short, else the next.
                    let next = if self.kt[ctx.pid as usize].zone_resume.is_some() { j } else { j + 1 };
                    if let Some(wait) = self.take_request_wait(ctx) {
                        dr.resume_zone = Some((next, sc.nr_scanned));
                        dr.nr_reclaimed = sc.nr_reclaimed;
                        return Err(wait);
                    }
                    self.kt[ctx.pid as usize].zone_resume = None;
                }
                // throttle_vm_writeout after this zone: the next zone when woken.
                if let Some(wait) = self.take_vm_throttle(ctx, dr.gfp) {
                    dr.resume_zone = Some((j + 1, sc.nr_scanned));
                    dr.nr_reclaimed = sc.nr_reclaimed;
                    return Err(wait);
                }
            }
            let lru_pages: u64 = zones.iter().map(|&zi| self.zone_reclaimable_pages(zi)).sum();
            let (_, slab_pages) = self.shrink_slab(ctx, sc.nr_scanned, dr.gfp, lru_pages, false);
            sc.nr_reclaimed += slab_pages;
            dr.nr_reclaimed = sc.nr_reclaimed;
            dr.total_scanned += sc.nr_scanned;
            if dr.nr_reclaimed >= SWAP_CLUSTER_MAX {
                // A throttle patch 6 asked for in this iteration is taken
                // even though enough was reclaimed (3.2 waits inside
                // shrink_inactive_list).
                if let Some(next) = self.take_throttle(ctx) {
                    dr.finished = true;
                    return Err(next);
                }
                break;
            }
            if dr.total_scanned > SWAP_CLUSTER_MAX + SWAP_CLUSTER_MAX / 2 {
                self.wakeup_flusher_threads(ctx, dr.total_scanned);
                dr.may_writepage = true;
            }
            dr.prio -= 1;
            if let Some(next) = self.take_throttle(ctx) {
                dr.end_wait_scanned = Some(sc.nr_scanned);
                return Err(next);
            }
            if let Some(next) = self.end_of_iteration_wait(ctx, &zones, sc.nr_scanned, prio) {
                return Err(next);
            }
            // cond_resched() with others waiting: the next iteration comes
            // in a new step (sched.rs, STEP_QUANTUM_NS).
            if ctx.sys + ctx.user >= crate::sched::STEP_QUANTUM_NS {
                return Err(Next::Run);
            }
        }
        if dr.nr_reclaimed > 0 {
            return Ok(dr.nr_reclaimed);
        }
        // all_unreclaimable() (3.0): no OOM while some allowed zone is not
        // flagged all_unreclaimable (kswapd sets the flag).
        if zones.iter().any(|&zi| !self.mm.zones[zi].all_unreclaimable) {
            return Ok(1);
        }
        Ok(0)
    }

    /// __zone_reclaim (3.x): reclaim max(32, 1 << order) pages from one zone,
    /// without writing or unmapping unless zone_reclaim_mode allows it.
    pub fn __zone_reclaim(&mut self, ctx: &mut Ctx, zi: usize, g: u32, order: usize) -> bool {
        let mode = self.mm.zone_reclaim_mode;
        let nr_pages = 1u64 << order;
        let mut sc = ScanControl {
            gfp: g,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr_to_reclaim: nr_pages.max(SWAP_CLUSTER_MAX),
            may_writepage: mode & 2 != 0,
            may_unmap: mode & 4 != 0,
            may_swap: true,
            order,
            kswapd: false,
            swappiness: self.k.swappiness,
        };
        let pid = ctx.pid as usize;
        let was = self.kt[pid].pf_memalloc;
        let was_swapwrite = self.kt[pid].swapwrite;
        // p->flags |= PF_MEMALLOC | PF_SWAPWRITE
        self.kt[pid].pf_memalloc = true;
        self.kt[pid].swapwrite = true;
        if self.zone_pagecache_reclaimable(zi) > self.mm.zones[zi].min_unmapped_pages {
            let mut prio = ZONE_RECLAIM_PRIORITY;
            loop {
                self.shrink_zone(ctx, prio, zi, &mut sc);
                // A refused write: 3.0 would sleep for its request and go
                // on; this step cannot sleep, so its bios are left to the
                // completion path and the scan goes on.
                if self.kt[pid].request_wait {
                    self.orphan_pending_writes(pid as u32);
                    self.kt[pid].zone_resume = None;
                }
                prio -= 1;
                if prio < 0 || sc.nr_reclaimed >= nr_pages {
                    break;
                }
            }
        }
        let before = self.zone_slab_reclaimable(zi);
        if before > self.mm.zones[zi].min_slab_pages {
            loop {
                let lru_pages = self.zone_reclaimable_pages(zi);
                let freed_objects = self.shrink_slab_objects(ctx, sc.nr_scanned, g, lru_pages, false);
                if freed_objects == 0 {
                    break;
                }
                if self.zone_slab_reclaimable(zi) + nr_pages <= before {
                    break;
                }
            }
            let after = self.zone_slab_reclaimable(zi);
            if after < before {
                sc.nr_reclaimed += before - after;
            }
        }
        self.kt[pid].pf_memalloc = was;
        self.kt[pid].swapwrite = was_swapwrite;
        // __zone_reclaim runs within one step and cannot sleep here: a
        // throttle its scanning asked for (patch 6) is not taken, nor a
        // wait for a free request (its writes, RECLAIM_WRITE or
        // RECLAIM_SWAP, still wait for theirs in the queue).
        self.kt[pid].throttle = None;
        self.kt[pid].vm_throttle = 0;
        self.orphan_pending_writes(pid as u32);
        self.kt[pid].zone_resume = None;
        sc.nr_reclaimed >= nr_pages
    }

    /// shrink_slab: (objects the shrinkers report freed, slab pages freed
    /// meanwhile: reclaim_state->reclaimed_slab).
    fn shrink_slab(&mut self, ctx: &mut Ctx, scanned: u64, g: u32, lru_pages: u64, kswapd: bool) -> (u64, u64) {
        let before = self.slab.pages_freed;
        let objects = self.shrink_slab_objects(ctx, scanned, g, lru_pages, kswapd);
        (objects, self.slab.pages_freed - before)
    }

    /// wakeup_kswapd (3.1). `gfp` is the allocation's mask, for the trace only.
    pub fn wakeup_kswapd(&mut self, ctx: &mut Ctx, zi: usize, order: usize, classzone: usize, gfp: u32) {
        let z = &self.mm.zones[zi];
        if z.present == 0 {
            return;
        }
        let node = z.node;
        // cpuset_zone_allowed_hardwall: only zones the waker may use.
        if !self.kt[ctx.pid as usize].mems.get(node).copied().unwrap_or(true) {
            return;
        }
        let ks = &mut self.kswapd[node];
        if order > ks.max_order {
            ks.max_order = order;
            ks.classzone_idx = ks.classzone_idx.min(classzone);
        }
        let pid = ks.pid;
        // !waitqueue_active(&pgdat->kswapd_wait): kswapd is on that queue
        // only in kswapd_try_to_sleep (its nap or its full sleep), not while
        // it sleeps in balance_pgdat's congestion_wait.
        if !self.sched.is_sleeping(pid) || ks.state == KsState::Balancing {
            return;
        }
        if self.k.kswapd_balance == KswapdBalance::NodeAnyZone {
            // A hopeless node is left to direct reclaim; a balanced one
            // is not woken unless boosted (pgdat_watermark_boosted, 5.0 on).
            // `classzone` is the request's highest zone type: the node's
            // zones up to it.
            let zones = self.node_zones(node);
            let eligible = zones.iter().filter(|&&z| self.mm.zones[z].zt <= classzone).count();
            if eligible == 0 {
                return;
            }
            let boosted = zones[..eligible].iter().any(|&z| self.mm.zones[z].watermark_boost > 0);
            if self.kswapd[node].failures >= MAX_RECLAIM_RETRIES || (self.pgdat_balanced(node, order, eligible - 1) && !boosted) {
                return;
            }
        } else {
            let low = self.mm.zones[zi].wmark_low;
            if self.mm.zone_watermark_ok_safe(zi, order, low, 0, 0) {
                return;
            }
        }
        if self.trace.on(Tp::MmVmscanWakeupKswapd) {
            let rec = TraceRec::WakeupKswapd { nid: node as u32, zid: self.mm.zones[zi].zt as u32, order: order as u32, gfp_flags: gfp };
            self.emit(ctx, &rec);
        }
        self.mm.vm.inc(Ev::KswapdWake);
        self.sched.wake_up_all(Wq::Kswapd(node), ctx.clock());
    }

    /// The zones of a node, low to high (pgdat->node_zones).
    fn node_zones(&self, node: usize) -> Vec<usize> {
        self.mm.nodes[node].zones.iter().flatten().copied().collect()
    }

    /// sleeping_prematurely (3.1): true if kswapd should not sleep yet.
    fn sleeping_prematurely(&self, node: usize, order: usize, remaining: bool, classzone: usize) -> bool {
        if remaining {
            return true;
        }
        if self.k.kswapd_balance == KswapdBalance::NodeAnyZone {
            // prepare_kswapd_sleep (4.12 on): a hopeless node, or a
            // balanced one.
            return self.kswapd[node].failures < MAX_RECLAIM_RETRIES && !self.pgdat_balanced(node, order, classzone);
        }
        let zones = self.node_zones(node);
        let mut balanced = 0u64;
        let mut all_ok = true;
        let mut present_upto = 0u64;
        for (i, &zi) in zones.iter().enumerate() {
            if i > classzone {
                break;
            }
            let z = &self.mm.zones[zi];
            present_upto += z.present;
            if z.all_unreclaimable {
                balanced += z.present;
                continue;
            }
            if self.mm.zone_watermark_ok_safe(zi, order, z.wmark_high, z.zt, 0) {
                balanced += z.present;
            } else {
                all_ok = false;
            }
        }
        if order > 0 {
            balanced < present_upto / 4
        } else {
            !all_ok
        }
    }

    /// One step of kswapd: a priority pass of balance_pgdat, or a sleep decision.
    pub fn kswapd_step(&mut self, node: usize, ctx: &mut Ctx) -> Next {
        self.finish_pending_wait(ctx);
        let woken = self.sched.tasks[ctx.pid as usize].woken;
        match self.kswapd[node].state {
            KsState::Sleeping => {
                // Woken from its full sleep: the node's zones take the
                // pressure threshold until it sleeps fully again.
                self.mm.set_pgdat_percpu_threshold(node, true);
                // Pick up the requested order and classzone.
                let ks = &mut self.kswapd[node];
                ks.order = ks.max_order;
                ks.classzone = ks.classzone_idx;
                ks.max_order = 0;
                ks.classzone_idx = self.mm.nodes[node].zones.iter().flatten().count().saturating_sub(1);
                ks.awake_since = ctx.now;
                self.begin_balance(node, ctx);
                Next::Run
            }
            KsState::Napping => {
                let (order, cz) = (self.kswapd[node].order, self.kswapd[node].classzone);
                if !self.sleeping_prematurely(node, order, woken, cz) {
                    if self.trace.on(Tp::MmVmscanKswapdSleep) {
                        self.emit(ctx, &TraceRec::KswapdSleep { nid: node as u32 });
                    }
                    self.kswapd[node].state = KsState::Sleeping;
                    // vmstat's drift tolerated again while it sleeps.
                    self.mm.set_pgdat_percpu_threshold(node, false);
                    return Next::Sleep { until: None, wq: Some(Wq::Kswapd(node)), io: false };
                }
                self.mm.vm.inc(if woken { Ev::KswapdLowWmarkHitQuickly } else { Ev::KswapdHighWmarkHitQuickly });
                let nz = self.mm.nodes[node].zones.iter().flatten().count().saturating_sub(1);
                let ks = &mut self.kswapd[node];
                ks.order = ks.max_order;
                ks.classzone = ks.classzone_idx;
                ks.max_order = 0;
                ks.classzone_idx = nz;
                self.begin_balance(node, ctx);
                Next::Run
            }
            KsState::Balancing => {
                if let Some(next) = self.take_vm_throttle(ctx, gfp::GFP_KERNEL) {
                    return next;
                }
                if let Some((wants_wait, has_under_min)) = self.kswapd[node].end_wait.take() {
                    if wants_wait {
                        if has_under_min {
                            self.mm.vm.inc(Ev::KswapdSkipCongestionWait);
                        } else {
                            return self.congestion_wait(ctx, self.jiffies_ns(self.hz / 10));
                        }
                    }
                }
                self.balance_pgdat_pass(node, ctx)
            }
        }
    }

    fn begin_balance(&mut self, node: usize, ctx: &mut Ctx) {
        if self.trace.on(Tp::MmVmscanKswapdWake) {
            let o = self.kswapd[node].order as u32;
            self.emit(ctx, &TraceRec::KswapdWake { nid: node as u32, zid: 0, order: o });
        }
        let ks = &mut self.kswapd[node];
        ks.state = KsState::Balancing;
        ks.prio = DEF_PRIORITY;
        ks.resume_from = 0;
        ks.resume_end = None;
        ks.end_zone = 0;
        ks.total_scanned = 0;
        ks.nr_reclaimed = 0;
        ks.may_writepage = true;
        ks.call_reclaimed = 0;
        self.mm.vm.inc(Ev::Pageoutrun);
        self.snapshot_boost(node);
    }

    /// balance_pgdat's start (5.0 on): the boosts of the node's zones up to
    /// the classzone, the pages boosted reclaim is to free for them.
    fn snapshot_boost(&mut self, node: usize) {
        if self.mm.watermark_boost_factor == 0 {
            return;
        }
        let zones = self.node_zones(node);
        let cz = self.kswapd[node].classzone;
        let boosts: Vec<i64> = zones
            .iter()
            .enumerate()
            .map(|(i, &zi)| if i <= cz { self.mm.zones[zi].watermark_boost } else { 0 })
            .collect();
        let sum: i64 = boosts.iter().sum();
        let ks = &mut self.kswapd[node];
        ks.nr_boost_reclaim = sum.max(0) as u64;
        ks.zone_boosts = boosts;
    }

    /// balance_pgdat's end (5.0 on): the boosts it began with come off the
    /// zones (boosts added meanwhile stay, for the next balance).
    fn end_boost(&mut self, node: usize) {
        let ks = &mut self.kswapd[node];
        ks.nr_boost_reclaim = 0;
        let boosts = std::mem::take(&mut ks.zone_boosts);
        if boosts.iter().all(|&b| b == 0) {
            return;
        }
        let zones = self.node_zones(node);
        for (&zi, &b) in zones.iter().zip(boosts.iter()) {
            if b > 0 {
                let z = &mut self.mm.zones[zi];
                z.watermark_boost -= z.watermark_boost.min(b);
                z.apply_boost();
            }
        }
    }

    /// One priority iteration of balance_pgdat (3.1).
    fn balance_pgdat_pass(&mut self, node: usize, ctx: &mut Ctx) -> Next {
        if self.k.kswapd_balance == KswapdBalance::NodeAnyZone {
            return self.balance_pgdat_node_pass(node, ctx);
        }
        let zones = self.node_zones(node);
        let (order, classzone) = (self.kswapd[node].order, self.kswapd[node].classzone);
        let prio = self.kswapd[node].prio;
        let mut all_ok = true;
        let mut balanced = 0u64;
        let mut has_under_min = false;
        // Find end_zone: the highest zone not balanced (once a priority:
        // a pass that slept midway goes on with what it found).
        let resumed = self.kswapd[node].resume_end.take();
        let mut end_zone: Option<usize> = resumed.map(|(e, _)| e);
        for i in (0..zones.len()).rev() {
            if resumed.is_some() {
                break;
            }
            let zi = zones[i];
            let z = &self.mm.zones[zi];
            if z.present == 0 || (z.all_unreclaimable && prio != DEF_PRIORITY) {
                continue;
            }
            if self.inactive_anon_is_low(zi) {
                let sc = self.kswapd_sc(node);
                self.shrink_active_list(ctx, zi, SWAP_CLUSTER_MAX, &sc, false);
            }
            let z = &self.mm.zones[zi];
            if !self.mm.zone_watermark_ok_safe(zi, order, z.wmark_high, 0, 0) {
                end_zone = Some(i);
                break;
            }
            if self.era == crate::spec::Era::V31 {
                self.mm.zones[zi].congested = false;
            }
        }
        let Some(mut end_zone) = end_zone else {
            // Nothing to do: balance_pgdat returns with the end_zone its
            // earlier passes found (0 if none).
            self.kswapd[node].classzone = self.kswapd[node].end_zone;
            self.kswapd[node].resume_from = 0;
            self.kt[ctx.pid as usize].zone_resume = None;
            return self.balance_done(node, ctx);
        };
        self.kswapd[node].end_zone = end_zone;
        let lru_pages: u64 = match resumed {
            Some((_, l)) => l,
            None => zones[..=end_zone].iter().map(|&zi| self.zone_reclaimable_pages(zi)).sum(),
        };
        let mut sc = self.kswapd_sc(node);
        let mut i = 0;
        while i <= end_zone {
            let zi = zones[i];
            i += 1;
            let z = &self.mm.zones[zi];
            if z.present == 0 || (z.all_unreclaimable && prio != DEF_PRIORITY) {
                continue;
            }
            sc.nr_scanned = 0;
            let gap = z.wmark_low.min((z.present as i64 + 99) / 100);
            let end_zt = self.mm.zones[zones[end_zone]].zt;
            // Zones this pass shrank before kswapd slept in get_request_wait
            // are not shrunk again.
            let shrunk_already = i - 1 < self.kswapd[node].resume_from;
            if !shrunk_already && !self.mm.zone_watermark_ok_safe(zi, order, z.wmark_high + gap, end_zt, 0) {
                if let Some(next) = self.kswapd_shrink_zone(ctx, node, prio, &mut sc, lru_pages, (zi, i - 1, end_zone)) {
                    return next;
                }
            }
            let ks = &mut self.kswapd[node];
            ks.nr_reclaimed = sc.nr_reclaimed;
            if ks.total_scanned > SWAP_CLUSTER_MAX * 2 && ks.total_scanned > ks.nr_reclaimed + ks.nr_reclaimed / 2 {
                ks.may_writepage = true;
            }
            sc.may_writepage = ks.may_writepage;
            let (unrecl, high, min, present) = {
                let z = &self.mm.zones[zi];
                (z.all_unreclaimable, z.wmark_high, z.wmark_min, z.present)
            };
            if unrecl {
                if end_zone > 0 && end_zone == i - 1 {
                    end_zone -= 1;
                }
                continue;
            }
            let end_zt = self.mm.zones[zones[end_zone]].zt;
            if !self.mm.zone_watermark_ok_safe(zi, order, high, end_zt, 0) {
                all_ok = false;
                if !self.mm.zone_watermark_ok_safe(zi, order, min, end_zt, 0) {
                    has_under_min = true;
                }
            } else {
                self.mm.zones[zi].congested = false;
                if i - 1 <= classzone {
                    balanced += present;
                }
            }
        }
        self.kswapd[node].resume_from = 0;
        self.kswapd[node].end_zone = end_zone;
        let present_upto: u64 = zones.iter().take(classzone + 1).map(|&zi| self.mm.zones[zi].present).sum();
        if all_ok || (order > 0 && balanced >= present_upto / 4) {
            // A throttle patch 6 asked for in this pass comes first; the
            // next step finds the node balanced again and finishes.
            if let Some(next) = self.take_throttle(ctx) {
                return next;
            }
            // balance_pgdat returns end_zone as the classzone kswapd sleeps on.
            self.kswapd[node].classzone = end_zone;
            return self.balance_done(node, ctx);
        }
        let ks = &mut self.kswapd[node];
        let total_scanned = ks.total_scanned;
        let restart = ks.nr_reclaimed >= SWAP_CLUSTER_MAX || prio == 0;
        if restart {
            // out: not balanced, goto loop_again (a fresh pass from DEF_PRIORITY).
            if ks.nr_reclaimed < SWAP_CLUSTER_MAX {
                ks.order = 0;
            }
            ks.prio = DEF_PRIORITY;
            ks.total_scanned = 0;
            ks.nr_reclaimed = 0;
            ks.may_writepage = true;
            self.mm.vm.inc(Ev::Pageoutrun);
        } else {
            ks.prio -= 1;
        }
        let wants_wait = total_scanned > 0 && prio < DEF_PRIORITY - 2;
        if let Some(next) = self.take_throttle(ctx) {
            self.kswapd[node].end_wait = Some((wants_wait, has_under_min));
            return next;
        }
        // The congestion wait comes before either way out of the pass.
        if wants_wait {
            if has_under_min {
                self.mm.vm.inc(Ev::KswapdSkipCongestionWait);
            } else {
                return self.congestion_wait(ctx, self.jiffies_ns(self.hz / 10));
            }
        }
        Next::Run
    }

    /// kswapd shrinks zone `zi`, at position `here` of a pass that ends at
    /// `end`, and its slab caches, counts what it scanned, and flags the
    /// zone all_unreclaimable when nothing there can be freed. Then a write
    /// that met a queue with no free request makes kswapd sleep
    /// (get_request_wait) and go on with the pass, this zone's scan where
    /// it stopped (zone_resume) or else the next zone, the zones before not
    /// shrunk again; throttle_vm_writeout at the end of the zone's
    /// shrink_zone sleeps and goes on with the next zone. (3.0 sleeps before
    /// this zone's shrink_slab and its all_unreclaimable test; here they
    /// come first, a timing difference only.)
    fn kswapd_shrink_zone(&mut self, ctx: &mut Ctx, node: usize, prio: i32, sc: &mut ScanControl, lru_pages: u64, at: (usize, usize, usize)) -> Option<Next> {
        let (zi, here, end) = at;
        self.shrink_zone(ctx, prio, zi, sc);
        let (nr_slab, slab_pages) = self.shrink_slab(ctx, sc.nr_scanned, gfp::GFP_KERNEL, lru_pages, true);
        sc.nr_reclaimed += slab_pages;
        self.kswapd[node].total_scanned += sc.nr_scanned;
        if nr_slab == 0 && !self.zone_reclaimable(zi) {
            self.mm.zones[zi].all_unreclaimable = true;
        }
        let reclaimed = sc.nr_reclaimed;
        let pid = ctx.pid as usize;
        if self.kt[pid].request_wait {
            let next_from = if self.kt[pid].zone_resume.is_some() { here } else { here + 1 };
            self.kswapd[node].nr_reclaimed = reclaimed;
            if let Some(next) = self.take_request_wait(ctx) {
                self.kswapd[node].resume_from = next_from;
                self.kswapd[node].resume_end = Some((end, lru_pages));
                return Some(next);
            }
            self.kt[pid].zone_resume = None;
        }
        if let Some(next) = self.take_vm_throttle(ctx, gfp::GFP_KERNEL) {
            self.kswapd[node].nr_reclaimed = reclaimed;
            self.kswapd[node].resume_from = here + 1;
            self.kswapd[node].resume_end = Some((end, lru_pages));
            return Some(next);
        }
        None
    }

    /// pgdat_balanced (4.12 on): some zone at or below the classzone (a
    /// position among the node's zones) meets its high mark, the
    /// classzone's protection included; a node without such a zone needs
    /// no balancing.
    fn pgdat_balanced(&self, node: usize, order: usize, classzone: usize) -> bool {
        let zones = self.node_zones(node);
        if zones.is_empty() {
            return true;
        }
        let cz = classzone.min(zones.len() - 1);
        let cz_zt = self.mm.zones[zones[cz]].zt;
        let mut any = false;
        for &zi in &zones[..=cz] {
            let z = &self.mm.zones[zi];
            if z.present == 0 {
                continue;
            }
            any = true;
            if self.mm.zone_watermark_ok_safe(zi, order, z.wmark_high, cz_zt, 0) {
                return true;
            }
        }
        !any
    }

    /// One priority iteration of balance_pgdat, 4.12 to 6.1
    /// (kswapd_balance = "node-any-zone"): done when some zone up to the
    /// classzone meets its high mark; otherwise shrink the zones up to the
    /// classzone (4.8's node LRU, here each zone's lists at the priority),
    /// and raise the priority only when the pass scanned fewer pages than
    /// the zones' high marks add up to, or reclaimed nothing. With a
    /// watermark boost to reclaim (5.0 on) it reclaims without writeback or
    /// swap, no further than DEF_PRIORITY - 2, while the node is balanced.
    fn balance_pgdat_node_pass(&mut self, node: usize, ctx: &mut Ctx) -> Next {
        let zones = self.node_zones(node);
        if zones.is_empty() {
            return self.balance_done(node, ctx);
        }
        let order = self.kswapd[node].order;
        let cz = self.kswapd[node].classzone.min(zones.len() - 1);
        let resumed = self.kswapd[node].resume_end.take();
        if resumed.is_none() {
            let balanced = self.pgdat_balanced(node, order, cz);
            if !balanced && self.kswapd[node].nr_boost_reclaim > 0 {
                // Short of its (boosted) marks: reclaim without the boost,
                // from DEF_PRIORITY; the marks stay boosted until the end.
                let ks = &mut self.kswapd[node];
                ks.nr_boost_reclaim = 0;
                ks.prio = DEF_PRIORITY;
            }
            if balanced && self.kswapd[node].nr_boost_reclaim == 0 {
                return self.balance_done(node, ctx);
            }
            let ks = &mut self.kswapd[node];
            ks.resume_from = 0;
            ks.total_scanned = 0;
            ks.nr_reclaimed = 0;
        }
        let boosting = self.kswapd[node].nr_boost_reclaim > 0;
        let prio = self.kswapd[node].prio;
        let mut sc = self.kswapd_sc(node);
        sc.may_writepage = !boosting || prio < DEF_PRIORITY - 2;
        sc.may_swap = !boosting;
        sc.nr_reclaimed = self.kswapd[node].nr_reclaimed;
        // kswapd_shrink_node: each zone's high mark, at least a batch.
        sc.nr_to_reclaim = zones[..=cz]
            .iter()
            .map(|&zi| (self.mm.zones[zi].wmark_high.max(0) as u64).max(SWAP_CLUSTER_MAX))
            .sum();
        let lru_pages: u64 = match resumed {
            Some((_, l)) => l,
            None => zones[..=cz].iter().map(|&zi| self.zone_reclaimable_pages(zi)).sum(),
        };
        let from = self.kswapd[node].resume_from;
        if resumed.is_none() {
            // kswapd_age_node: the anonymous lists age whatever the boost,
            // every zone of the node whatever the classzone.
            for &zi in &zones {
                if self.mm.zones[zi].present > 0 && self.inactive_anon_is_low(zi) {
                    let age = self.kswapd_sc(node);
                    self.shrink_active_list(ctx, zi, SWAP_CLUSTER_MAX, &age, false);
                }
            }
        }
        for i in from..=cz {
            let zi = zones[i];
            if self.mm.zones[zi].present == 0 {
                continue;
            }
            sc.nr_scanned = 0;
            if let Some(next) = self.kswapd_shrink_zone(ctx, node, prio, &mut sc, lru_pages, (zi, i, cz)) {
                return next;
            }
        }
        let reclaimed = sc.nr_reclaimed;
        let ks = &mut self.kswapd[node];
        let scanned = ks.total_scanned;
        ks.resume_from = 0;
        ks.nr_reclaimed = 0;
        ks.total_scanned = 0;
        ks.call_reclaimed += reclaimed;
        if reclaimed > 0 {
            ks.failures = 0;
        }
        if ks.order > 0 && ks.call_reclaimed >= 2u64 << ks.order {
            // compact_gap: enough for the order; balance at order 0.
            ks.order = 0;
        }
        let mut raise = scanned < sc.nr_to_reclaim;
        if boosting {
            if prio == DEF_PRIORITY - 2 {
                raise = false;
            }
            ks.nr_boost_reclaim -= ks.nr_boost_reclaim.min(reclaimed);
        }
        // No progress for a boost (IO cannot be queued): the loop ends.
        let give_up = boosting && ks.nr_boost_reclaim > 0 && reclaimed == 0;
        if !give_up && (raise || reclaimed == 0) {
            ks.prio -= 1;
        }
        if give_up || ks.prio < 1 {
            if ks.call_reclaimed == 0 {
                ks.failures += 1;
            }
            return self.balance_done(node, ctx);
        }
        Next::Run
    }

    fn kswapd_sc(&self, node: usize) -> ScanControl {
        let ks = &self.kswapd[node];
        ScanControl {
            gfp: gfp::GFP_KERNEL,
            nr_scanned: 0,
            nr_reclaimed: ks.nr_reclaimed,
            nr_to_reclaim: u64::MAX,
            may_writepage: ks.may_writepage,
            may_unmap: true,
            may_swap: true,
            order: ks.order,
            kswapd: true,
            swappiness: self.k.swappiness,
        }
    }

    /// balance_pgdat returned balanced: kswapd_try_to_sleep's first half.
    fn balance_done(&mut self, node: usize, ctx: &mut Ctx) -> Next {
        self.end_boost(node);
        let (order, cz) = (self.kswapd[node].order, self.kswapd[node].classzone);
        if !self.sleeping_prematurely(node, order, false, cz) {
            self.kswapd[node].state = KsState::Napping;
            return Next::Sleep { until: Some(ctx.clock() + self.jiffies_ns(self.hz / 10)), wq: Some(Wq::Kswapd(node)), io: false };
        }
        self.mm.vm.inc(Ev::KswapdHighWmarkHitQuickly);
        if self.k.kswapd_balance == KswapdBalance::NodeAnyZone {
            // kswapd() reads the order asked for since (0 if none) for the
            // next balance_pgdat, and keeps its classzone.
            let ks = &mut self.kswapd[node];
            ks.order = ks.max_order;
            ks.max_order = 0;
        }
        self.begin_balance(node, ctx);
        Next::Run
    }

    /// zone_reclaim result codes on the 2.6.18 path (0/1) share ZoneReclaim.
    pub fn zone_reclaim_code(ok: bool) -> ZoneReclaim {
        if ok {
            ZoneReclaim::Success
        } else {
            ZoneReclaim::Some
        }
    }

    /// Highest zone type index present, for vmstat rows.
    pub fn zone_types_present(&self) -> [bool; NR_ZONE_TYPES] {
        let mut p = [false; NR_ZONE_TYPES];
        for z in &self.mm.zones {
            p[z.zt] = true;
        }
        p
    }
}

/// What pageout() returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pageout {
    Keep,
    Activate,
    Success,
}

impl Kernel {
    /// may_write_to_queue: kswapd and zone_reclaim (PF_SWAPWRITE) always may,
    /// and so does a task in a buffered write() to the device it writes
    /// (bdi == current->backing_dev_info; the filesystem's is the one file
    /// device); others only when the device is not write-congested.
    fn may_write_to_queue(&self, ctx: &Ctx, p: u32, sc: &ScanControl) -> bool {
        let kt = &self.kt[ctx.pid as usize];
        if kt.kswapd || kt.swapwrite || kt.write_bdi || sc.order > 3 {
            return true;
        }
        // Swap's backing device is never marked congested in 3.0.
        if self.mm.pages.test(p, PG_SWAPCACHE) {
            return true;
        }
        let dev = self.fs.dev;
        !self.blk.congested(dev, crate::block::Dir::Write)
    }

    /// pageout: write a dirty page from reclaim through the filesystem's
    /// ->writepage, which may refuse (ext4 delayed allocation; xfs from
    /// direct reclaim): then the page is redirtied, but 3.0 still counts
    /// the call in nr_vmscan_write.
    fn pageout(&mut self, ctx: &mut Ctx, p: u32, sc: &ScanControl) -> Pageout {
        let swapcache = self.mm.pages.test(p, PG_SWAPCACHE);
        if !self.mm.pages.test(p, PG_FILE) && !swapcache {
            return Pageout::Keep;
        }
        if !self.may_write_to_queue(ctx, p, sc) {
            return Pageout::Keep;
        }
        if swapcache {
            // swap_writepage: PG_reclaim so the page rotates to the tail
            // when its write completes. With no free request the bio waits
            // for one, and the reclaimer with it (submit_reclaim_write).
            self.mm.pages.set(p, PG_RECLAIM);
            self.swap_writepage(ctx, p);
            if self.trace.on(Tp::MmVmscanWritepage) {
                self.emit(ctx, &TraceRec::Writepage { pfn: p as u64, file: false, sync: false });
            }
            let zi = self.mm.zone_of(p);
            self.zs_add(zi, Zs::NrVmscanWrite, 1);
            return Pageout::Success;
        }
        self.clear_page_dirty_for_io(p);
        self.mm.pages.set(p, PG_RECLAIM);
        let kswapd = self.kt[ctx.pid as usize].kswapd;
        self.writepage_for_reclaim(ctx, p, kswapd);
        if !self.mm.pages.test(p, PG_WRITEBACK) {
            self.mm.pages.clear(p, PG_RECLAIM);
        }
        if self.trace.on(Tp::MmVmscanWritepage) {
            self.emit(ctx, &TraceRec::Writepage { pfn: p as u64, file: true, sync: false });
        }
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrVmscanWrite, 1);
        Pageout::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::TaskKind;
    use serde_json::json;

    /// One node of 4 CPUs, one xfs disk, and the kernel of seed 004's series
    /// with `patches` of its eight applied (0, 7 or 8).
    fn boot(patches: u32) -> Kernel {
        let mut k = json!({"name": "k", "era": "3.0", "zlc": "after-first-zone", "dirty_ratio": 40});
        if patches >= 7 {
            k["direct_fs_writeback"] = json!(false);
            k["kswapd_fs_writeback"] = json!(if patches == 8 { "never" } else { "high-priority" });
            k["reclaim_throttle_dirty"] = json!(true);
            k["reclaim_invalidate"] = json!(true);
        }
        let spec = json!({
            "machine": {"name": "box", "page_size": 4096, "cache_line": 64, "hz": 250,
                "nodes": [{"cpus": 4, "zones": [{"name": "DMA32", "present_pages": 8192}], "reserved_pages": 64}],
                "distance": [[10]],
                "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                         "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80},
                "storage": {"devices": [{"name": "sda", "disks": 1, "bandwidth_mib_s": 100, "access_us": 8000,
                                         "nr_requests": 128, "max_sectors_kib": 512, "size_mib": 10000}],
                            "fs": {"kind": "xfs", "device": 0, "size_mib": 9000}}},
            "kernel": k,
            "workload": {"kind": "fsmark", "threads": 1, "dirs": 1, "subdirs": 2, "files_per_subdir": 10,
                         "files": 1, "iterations": 1, "file_bytes": 4096}});
        Kernel::boot(&crate::spec::parse(&spec.to_string()).unwrap()).unwrap()
    }

    /// 32 dirty, unreferenced file pages at the tail of the inactive list,
    /// then one shrink_inactive_list pass by kswapd or a direct reclaimer at
    /// `prio`. Returns (nr_vmscan_write, nr_vmscan_invalidate, pages put
    /// under writeback, throttle asked for).
    /// The booted kernel's user task on CPU 0, and a new file it created.
    fn user_file(k: &mut Kernel) -> (Ctx, u32) {
        let user = k.sched.tasks.iter().position(|t| t.kind == TaskKind::User).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: user, ..Default::default() };
        let ino = k.sys_creat(&mut ctx, 0).ok().unwrap();
        (ctx, ino)
    }

    #[test]
    fn ext3_maps_blocks_at_write_time_and_takes_pages_with_gfp_fs() {
        // ext3: block_write_begin maps each page's block as it is written,
        // the file's blocks contiguous; write()'s pages come with __GFP_FS;
        // reclaim's ->writepage writes. ext4 and xfs: blocks wait for
        // writeback (delayed allocation), pages come without __GFP_FS.
        for kind in ["ext3", "ext4", "xfs"] {
            let mut k = boot(0);
            k.fs.kind = match kind {
                "ext3" => crate::spec::FsKind::Ext3,
                "ext4" => crate::spec::FsKind::Ext4,
                _ => crate::spec::FsKind::Xfs,
            };
            let (mut ctx, ino) = user_file(&mut k);
            for idx in 0..3 {
                assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), crate::filemap::PageOp::Done));
            }
            let blocks: Vec<u64> = (0..3).map(|i| k.fs.bmap(ino, i)).collect();
            if kind == "ext3" {
                assert!(blocks[0] != crate::fs::NO_BLOCK && blocks[1] == blocks[0] + 1 && blocks[2] == blocks[0] + 2, "{blocks:?}");
                assert_ne!(k.write_begin_gfp() & gfp::FS, 0);
            } else {
                assert_eq!(blocks, vec![crate::fs::NO_BLOCK; 3], "{kind}");
                assert_eq!(k.write_begin_gfp() & gfp::FS, 0, "{kind}");
            }
            assert_eq!(k.fs.writepage_allowed(ino, 0, false), kind == "ext3", "{kind}: direct reclaim's writepage");
        }
    }

    #[test]
    fn ext4_writeback_writes_the_whole_delayed_run_where_xfs_writes_the_chunk() {
        // 100 dirty pages without blocks, 8 asked for. Range-cyclic
        // writeback (the flusher's background and kupdate passes, a
        // throttled writer): ext4_da_writepages raises nr_to_write to the
        // run of delayed pages (all 100; a page given a block at 20 ends
        // the run there); xfs writes the 8. A whole-range pass
        // (wakeup_flusher_threads' work): ext4 raises it to 8 x 8 = 64,
        // delayed or not.
        for (kind, cyclic, hole, want) in [
            ("ext4", true, None, 100),
            ("xfs", true, None, 8),
            ("ext4", true, Some(20u64), 20),
            ("ext4", false, None, 64),
            ("ext4", false, Some(20u64), 64),
            ("xfs", false, None, 8),
        ] {
            let mut k = boot(0);
            k.fs.kind = if kind == "ext4" { crate::spec::FsKind::Ext4 } else { crate::spec::FsKind::Xfs };
            let (mut ctx, ino) = user_file(&mut k);
            for idx in 0..100 {
                assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), crate::filemap::PageOp::Done));
            }
            if let Some(h) = hole {
                k.fs.alloc_blocks(ino, h, 1);
            }
            let (written, blocked) = k.writeback_single_inode(&mut ctx, ino, 8, cyclic);
            assert!(!blocked);
            assert_eq!(written, want, "{kind} cyclic {cyclic} {hole:?}");
            let under_wb = (0..100).filter(|&i| k.mm.pages.test(k.find_get_page(ino, i).unwrap(), PG_WRITEBACK)).count() as u64;
            assert_eq!(under_wb, want, "{kind} cyclic {cyclic} {hole:?}");
        }
    }

    #[test]
    fn a_writer_may_write_to_its_own_congested_device() {
        // may_write_to_queue (3.0): on a write-congested device only kswapd
        // (PF_SWAPWRITE) and a task whose current->backing_dev_info is that
        // device (inside a buffered write()) may call ->writepage; any other
        // reclaimer keeps the page (PAGE_KEEP, counted as congested).
        let mut k = boot(0);
        let (mut ctx, ino) = user_file(&mut k);
        assert!(matches!(k.write_page(&mut ctx, ino, 0, 4096), crate::filemap::PageOp::Done));
        let pid = ctx.pid as usize;
        assert!(!k.kt[pid].write_bdi, "write_page leaves the flag as it found it");
        let p = k.find_get_page(ino, 0).unwrap();
        let sc = ScanControl {
            gfp: gfp::GFP_HIGHUSER_MOVABLE,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr_to_reclaim: 32,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            order: 0,
            kswapd: false,
            swappiness: 60,
        };
        assert!(k.may_write_to_queue(&ctx, p, &sc), "not congested: anybody may");
        for i in 0..113u64 {
            k.blk.submit(0, k.fs.dev, crate::block::Dir::Write, 1000 + 64 * i, &[0], 0);
        }
        assert!(k.blk.congested(k.fs.dev, crate::block::Dir::Write));
        assert!(!k.may_write_to_queue(&ctx, p, &sc), "a reclaimer outside write() keeps the page");
        k.kt[pid].write_bdi = true;
        assert!(k.may_write_to_queue(&ctx, p, &sc), "bdi == current->backing_dev_info");
        k.kt[pid].write_bdi = false;
        let ks = k.sched.tasks.iter().position(|t| matches!(t.kind, TaskKind::Kswapd(_))).unwrap() as u32;
        assert!(k.may_write_to_queue(&Ctx { pid: ks, ..ctx }, p, &sc), "kswapd: PF_SWAPWRITE");
    }

    #[test]
    fn an_uncongested_wait_iff_congested_counts_the_cpu_given_up() {
        // Nothing is congested: wait_iff_congested is cond_resched(). A task
        // early in its step goes on at once and reports no delay; one whose
        // time is up, or the allocator's retry, gives its CPU up, and the
        // wait (reported when it runs again) lasts until then.
        let mut k = boot(0);
        let (mut ctx, _) = user_file(&mut k);
        let pid = ctx.pid as usize;
        assert!(k.wait_iff_congested(&mut ctx, 0, k.jiffies_ns(25), false).is_none());
        assert!(!k.kt[pid].wait.active);
        let r = k.wait_iff_congested(&mut ctx, 0, k.jiffies_ns(5), true);
        assert!(matches!(r, Some(Next::Run)));
        assert!(k.kt[pid].wait.active && k.kt[pid].wait.iff && k.kt[pid].wait.start == ctx.clock());
        k.kt[pid].wait.active = false;
        ctx.sys += crate::sched::STEP_QUANTUM_NS;
        assert!(matches!(k.wait_iff_congested(&mut ctx, 0, k.jiffies_ns(25), false), Some(Next::Run)));
        assert!(k.kt[pid].wait.active);
    }

    fn reclaim_dirty(patches: u32, by_kswapd: bool, prio: i32) -> (i64, i64, usize, bool) {
        let mut k = boot(patches);
        let user = k.sched.tasks.iter().position(|t| t.kind == TaskKind::User).unwrap() as u32;
        let ks = k.sched.tasks.iter().position(|t| matches!(t.kind, TaskKind::Kswapd(_))).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: user, ..Default::default() };
        let ino = k.sys_creat(&mut ctx, 0).ok().unwrap();
        let mut pages = Vec::new();
        for idx in 0..32 {
            assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), crate::filemap::PageOp::Done));
            pages.push(k.find_get_page(ino, idx).unwrap());
        }
        k.lru_add_drain(&mut ctx);
        for &p in &pages {
            k.mm.pages.clear(p, PG_REFERENCED);
        }
        let zi = k.mm.zone_of(pages[0]);
        if by_kswapd {
            ctx.pid = ks;
        }
        let mut sc = ScanControl {
            gfp: gfp::GFP_KERNEL,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr_to_reclaim: SWAP_CLUSTER_MAX,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            order: 0,
            kswapd: by_kswapd,
            swappiness: 60,
        };
        let reclaimed = k.shrink_inactive_list(&mut ctx, zi, 32, &mut sc, prio, true);
        assert_eq!(reclaimed, 0, "a dirty page was freed");
        let under_wb = pages.iter().filter(|&&p| k.mm.pages.test(p, PG_WRITEBACK)).count();
        let throttle = k.kt[ctx.pid as usize].throttle.is_some();
        (k.zs(zi, Zs::NrVmscanWrite), k.zs(zi, Zs::NrVmscanImmediate), under_wb, throttle)
    }

    /// A one-node machine without disks (`cpus` CPUs, `zones`, 64 pages
    /// reserved), booted with `kernel`, for a memory hog of one page.
    fn one_node(cpus: u32, zones: serde_json::Value, kernel: serde_json::Value) -> Kernel {
        let spec = json!({
            "machine": {"name": "box", "page_size": 4096, "cache_line": 64, "hz": 250,
                "nodes": [{"cpus": cpus, "zones": zones, "reserved_pages": 64}],
                "distance": [[10]],
                "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                         "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80}},
            "kernel": kernel,
            "workload": {"kind": "memhog", "bytes": 4096, "threads": 1}});
        Kernel::boot(&crate::spec::parse(&spec.to_string()).unwrap()).unwrap()
    }

    /// A one-node 6.1-like kernel (era 4.11 with 5.0's boost and 4.12's
    /// kswapd balance): one DMA32 zone of 8192 pages, 64 reserved.
    fn boot_61(boost_factor: u64) -> Kernel {
        one_node(2, json!([{"name": "DMA32", "present_pages": 8192}]),
            json!({"name": "k", "era": "4.11", "zlc": "none", "pcp_sizing": "zone-low", "new_anon_lru": "inactive",
                   "kswapd_balance": "node-any-zone", "watermark_boost_factor": boost_factor}))
    }

    #[test]
    fn a_watermark_boost_adds_a_pageblock_up_to_the_factor_of_the_high_mark() {
        // 8192 pages: min_free_kbytes sqrt(32768 KiB x 16) = 724 KiB, 181
        // pages; 4.11's gap max(181 / 4, 8192 x 10 / 10000) = 45: marks
        // 181 / 226 / 271. A pageblock is 512 pages (order 9).
        let mut k = boot_61(15000);
        let z = &k.mm.zones[0];
        assert_eq!((z.wmark_min, z.wmark_low, z.wmark_high), (181, 226, 271));
        // max_boost = 271 x 15000 / 10000 = 406, at least a pageblock: 512.
        assert!(k.mm.boost_watermark(0));
        assert!(k.mm.boost_watermark(0));
        let z = &k.mm.zones[0];
        assert_eq!(z.watermark_boost, 512, "the boost outgrew max(pageblock, 150% of high)");
        assert_eq!((z.wmark_min, z.wmark_low, z.wmark_high), (181 + 512, 226 + 512, 271 + 512));
        assert_eq!(z.wmark_base, [181, 226, 271], "the boost changed _watermark[]");
        // 100000 / 10000 of high is 2710 pages: six pageblocks reach it.
        let mut k = boot_61(100_000);
        for _ in 0..8 {
            k.mm.boost_watermark(0);
        }
        assert_eq!(k.mm.zones[0].watermark_boost, 2710);
        // Without the sysctl (every era before 5.0) nothing is boosted.
        let mut k = boot_61(0);
        assert!(!k.mm.boost_watermark(0));
        assert_eq!(k.mm.zones[0].wmark_high, 271);
    }

    #[test]
    fn a_boosted_zone_wakes_kswapd_at_its_next_allocation_though_its_marks_are_met() {
        for factor in [0u64, 15000] {
            let mut k = boot_61(factor);
            let user = k.sched.tasks.iter().position(|t| t.kind == TaskKind::User).unwrap() as u32;
            let mut ctx = Ctx { cpu: 0, node: 0, pid: user, ..Default::default() };
            // A fallback below a pageblock set the zone's flag (steal_suitable_fallback).
            if k.mm.boost_watermark(0) {
                k.mm.zones[0].boosted_wmark = true;
            }
            let before = k.mm.vm.get(Ev::KswapdWake);
            assert!(matches!(k.alloc_pages(&mut ctx, gfp::GFP_HIGHUSER_MOVABLE, 0, 0), crate::page_alloc::AllocRes::Page(..)));
            let woke = k.mm.vm.get(Ev::KswapdWake) - before;
            assert_eq!(woke, u64::from(factor > 0), "factor {factor}: kswapd wakes only for a boost, the zone being far above its marks");
            assert!(!k.mm.zones[0].boosted_wmark, "the flag outlived the wake");
        }
    }

    #[test]
    fn boosted_reclaim_neither_writes_nor_swaps_and_its_end_takes_the_boost_off() {
        let mut k = boot_61(15000);
        let ks = k.sched.tasks.iter().position(|t| matches!(t.kind, TaskKind::Kswapd(_))).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: ks, ..Default::default() };
        k.mm.boost_watermark(0);
        k.begin_balance(0, &mut ctx);
        assert_eq!(k.kswapd[0].nr_boost_reclaim, 512);
        // The node meets its boosted marks (the zone is nearly all free), so
        // this is boosted reclaim: may_swap and may_writepage are off, and
        // with nothing on the file lists a pass frees nothing and gives up.
        let _ = k.balance_pgdat_pass(0, &mut ctx);
        assert_eq!((k.mm.vm.get(Ev::Pswpout), k.zs(0, Zs::NrVmscanWrite)), (0, 0));
        let z = &k.mm.zones[0];
        assert_eq!((z.watermark_boost, z.wmark_high), (0, 271), "balance_pgdat's end left the boost on");
        assert_eq!(k.kswapd[0].nr_boost_reclaim, 0);
        // A balance that freed nothing counts toward a hopeless node.
        assert_eq!(k.kswapd[0].failures, 1);
        // A boost added while kswapd balanced stays for the next balance.
        k.begin_balance(0, &mut ctx);
        k.mm.boost_watermark(0);
        let _ = k.balance_pgdat_pass(0, &mut ctx);
        assert_eq!(k.mm.zones[0].watermark_boost, 512, "a boost added during the balance was taken off");
    }

    #[test]
    fn node_balance_is_met_by_any_zone_up_to_the_classzone() {
        // Two zones: DMA32 nearly empty, NORMAL full of free pages. 3.x's
        // kswapd works until both meet their marks; 4.12's stops when one does.
        let mut k = one_node(2, json!([{"name": "DMA32", "present_pages": 4096}, {"name": "NORMAL", "present_pages": 4096}]),
            json!({"name": "k", "era": "4.11", "zlc": "none", "kswapd_balance": "node-any-zone"}));
        assert!(k.pgdat_balanced(0, 0, 1));
        // Empty DMA32's free lists (the pages go to the census as kernel pages).
        let user = k.sched.tasks.iter().position(|t| t.kind == TaskKind::User).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: user, ..Default::default() };
        while k.mm.zones[0].free_pages > 10 {
            match k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE) {
                Some(p) => {
                    k.mm.pages.flags[p as usize] = crate::page::PG_KERNEL;
                }
                None => break,
            }
        }
        assert!(k.pgdat_balanced(0, 0, 1), "NORMAL alone meets its mark: the node is balanced");
        assert!(!k.pgdat_balanced(0, 0, 0), "DMA32 alone, empty, met its mark");
        assert!(!k.sleeping_prematurely(0, 0, false, 1));
        assert!(k.sleeping_prematurely(0, 0, false, 0));
    }

    #[test]
    fn a_kswapd_pass_that_slept_midway_goes_on_and_the_next_balance_starts_afresh() {
        let mut k = boot(0);
        let ks = k.sched.tasks.iter().position(|t| matches!(t.kind, TaskKind::Kswapd(_))).unwrap() as u32;
        let mut ctx = Ctx { cpu: 0, node: 0, pid: ks, ..Default::default() };
        // A pass slept after its first zone with end_zone 0: it goes on with
        // that end_zone although the node now looks balanced (3.0 finds
        // end_zone once a priority), and shrinks no zone again.
        k.begin_balance(0, &mut ctx);
        k.kswapd[0].resume_from = 1;
        k.kswapd[0].resume_end = Some((0, 1000));
        let _ = k.balance_pgdat_pass(0, &mut ctx);
        assert!(k.kswapd[0].resume_end.is_none());
        assert_eq!(k.kswapd[0].resume_from, 0, "a finished pass kept its resume point");
        // A pass that finds nothing to do returns the end_zone of the
        // call's earlier passes (3.0's end_zone lives for the call; 7
        // stands for one found earlier).
        k.kswapd[0].end_zone = 7;
        let _ = k.balance_pgdat_pass(0, &mut ctx);
        assert_eq!(k.kswapd[0].classzone, 7, "a pass with nothing to do returned another classzone");
        // A new balance_pgdat does not inherit a sleeping pass's resume point.
        k.kswapd[0].resume_from = 1;
        k.kswapd[0].resume_end = Some((0, 1000));
        k.begin_balance(0, &mut ctx);
        assert_eq!((k.kswapd[0].resume_from, k.kswapd[0].resume_end), (0, None));
    }

    #[test]
    fn the_series_decides_who_writes_a_dirty_file_page() {
        // 3.0: every reclaimer calls pageout (counted); xfs writes only for
        // kswapd. The oldest page comes first and xfs_cluster_write takes
        // the 31 after it along, so kswapd's one pageout writes all 32 and
        // the rest are found under writeback.
        assert_eq!(reclaim_dirty(0, true, DEF_PRIORITY), (1, 0, 32, false));
        assert_eq!(reclaim_dirty(0, false, DEF_PRIORITY), (32, 0, 0, false));
        // Patches 1-7: direct reclaim never writes, kswapd only below DEF_PRIORITY - 2;
        // the pages skipped are marked for immediate reclaim, and meeting 32
        // dirty pages of 32 taken asks for the throttle at any priority.
        assert_eq!(reclaim_dirty(7, false, DEF_PRIORITY), (0, 32, 0, true));
        assert_eq!(reclaim_dirty(7, true, DEF_PRIORITY - 2), (0, 32, 0, true));
        // At DEF_PRIORITY - 3 kswapd writes: its first pageout takes the
        // whole batch under writeback, so one dirty page of 32 is met, fewer
        // than 32 >> 3, and no throttle is asked for.
        assert_eq!(reclaim_dirty(7, true, DEF_PRIORITY - 3), (1, 0, 32, false));
        // Patch 8: kswapd never writes a file page.
        assert_eq!(reclaim_dirty(8, true, 0), (0, 32, 0, true));
    }

    #[test]
    fn a_page_marked_for_immediate_reclaim_goes_to_the_tail_when_its_writeback_ends() {
        let mut k = boot(7);
        let (mut ctx, ino) = user_file(&mut k);
        for idx in 0..2 {
            assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), crate::filemap::PageOp::Done));
        }
        k.lru_add_drain(&mut ctx);
        let (a, b) = (k.find_get_page(ino, 0).unwrap(), k.find_get_page(ino, 1).unwrap());
        let zi = k.mm.zone_of(a);
        // Page `a` was skipped by reclaim under patch 7; `b` was not.
        k.mm.pages.set(a, PG_RECLAIM);
        for p in [a, b] {
            k.clear_page_dirty_for_io(p);
            k.set_page_writeback(p);
            k.end_page_writeback(p);
        }
        let tail = k.mm.zones[zi].lru[LRU_INACTIVE_FILE].tail;
        assert_eq!(tail, a, "the page written after being marked was not rotated to the tail");
        assert!(!k.mm.pages.test(a, PG_RECLAIM));
        // A write fault redirtying a marked page unmarks it (set_page_dirty's
        // ClearPageReclaim); write(2) does not (__set_page_dirty).
        k.mm.pages.set(b, PG_RECLAIM);
        assert!(matches!(k.write_page(&mut ctx, ino, 1, 4096), crate::filemap::PageOp::Done));
        assert!(k.mm.pages.test(b, PG_RECLAIM));
        assert!(matches!(k.shared_write_fault(&mut ctx, ino, 1), crate::filemap::PageOp::Done));
        assert!(!k.mm.pages.test(b, PG_RECLAIM));
    }

    #[test]
    fn a_write_to_a_page_under_writeback_waits_for_it_in_3_0_and_not_after() {
        // 3.0: grab_cache_page_write_begin waits for the page's writeback
        // before write(2) copies into it; __block_page_mkwrite dirties the
        // page, then waits. 4.11 waits only on devices needing stable pages.
        use crate::filemap::PageOp;
        use crate::spec::Era;
        for era in [Era::V30, Era::V411] {
            let mut k = boot(0);
            k.era = era;
            let (mut ctx, ino) = user_file(&mut k);
            for idx in 0..2 {
                assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), PageOp::Done));
            }
            k.lru_add_drain(&mut ctx);
            let (p, q) = (k.find_get_page(ino, 0).unwrap(), k.find_get_page(ino, 1).unwrap());
            for x in [p, q] {
                k.clear_page_dirty_for_io(x);
                k.set_page_writeback(x);
            }
            let zi = k.mm.zone_of(p);
            let sleeps = |r: &PageOp| matches!(r, PageOp::Sleep(Next::Sleep { wq: Some(Wq::Page(z)), io: true, .. }) if *z == zi);
            // write(2) to page 0.
            let r = k.write_page(&mut ctx, ino, 0, 4096);
            if era == Era::V30 {
                assert!(sleeps(&r), "{era:?}: write(2) did not wait for the page's writeback");
                assert!(!k.mm.pages.test(p, PG_DIRTY), "copied before the wait");
                assert!(k.mm.pages.test(p, PG_FAULTREF), "reclaim could take the page the writer holds");
                // Woken by another page's completion: waits again, one wait counted.
                assert!(sleeps(&k.write_page(&mut ctx, ino, 0, 4096)));
                assert_eq!(k.mm.sim.writeback_waits, 1);
                k.end_page_writeback(p);
                assert!(matches!(k.write_page(&mut ctx, ino, 0, 4096), PageOp::Done));
            } else {
                assert!(matches!(r, PageOp::Done), "{era:?}");
            }
            assert!(k.mm.pages.test(p, PG_DIRTY) && !k.mm.pages.test(p, PG_FAULTREF));
            // A write fault on page 1 of the shared mapping.
            let r = k.shared_write_fault(&mut ctx, ino, 1);
            assert!(k.mm.pages.test(q, PG_DIRTY), "{era:?}: page_mkwrite dirties the page first");
            if era == Era::V30 {
                assert!(sleeps(&r), "the write fault did not wait for the page's writeback");
                k.end_page_writeback(q);
                assert!(matches!(k.shared_write_fault(&mut ctx, ino, 1), PageOp::Done));
                assert_eq!(k.mm.sim.writeback_waits, 2);
            } else {
                assert!(matches!(r, PageOp::Done));
                assert_eq!(k.mm.sim.writeback_waits, 0);
            }
            assert!(!k.mm.pages.test(q, PG_FAULTREF));
        }
    }

    #[test]
    fn unlink_frees_the_pages_not_under_writeback_before_it_waits() {
        // truncate_inode_pages_range (3.0): a first pass removes every page
        // neither locked nor under writeback; only then does it wait.
        let mut k = boot(0);
        let (mut ctx, ino) = user_file(&mut k);
        for idx in 0..16 {
            assert!(matches!(k.write_page(&mut ctx, ino, idx, 4096), crate::filemap::PageOp::Done));
        }
        k.lru_add_drain(&mut ctx);
        // Page 3 is being written; the other 15 are dirty.
        let p3 = k.find_get_page(ino, 3).unwrap();
        k.clear_page_dirty_for_io(p3);
        k.set_page_writeback(p3);
        let zi = k.mm.zone_of(p3);
        let r = k.sys_unlink(&mut ctx, ino);
        assert!(matches!(r, crate::filemap::PageOp::Sleep(Next::Sleep { wq: Some(Wq::Page(z)), .. }) if z == zi), "unlink did not wait for the page under writeback");
        assert_eq!(k.inode_pages(ino), vec![p3], "pages other than the one under writeback are still cached");
        assert_eq!(k.zs(zi, Zs::NrFileDirty), 0);
        assert_eq!(k.zs(zi, Zs::NrFilePages), 1);
        // Its writeback ends: the unlink finishes.
        k.end_page_writeback(p3);
        assert!(matches!(k.sys_unlink(&mut ctx, ino), crate::filemap::PageOp::Done));
        assert!(k.inode_pages(ino).is_empty());
    }

    #[test]
    fn unmapping_a_young_pte_marks_its_page_accessed() {
        // zap_pte_range (exit or munmap): a page used since reclaim last
        // looked gets PG_referenced, or is activated if it had it already.
        let mut k = boot(0);
        let (mut ctx, ino) = user_file(&mut k);
        for idx in 0..3 {
            assert!(matches!(k.shared_write_fault(&mut ctx, ino, idx), crate::filemap::PageOp::Done));
        }
        k.lru_add_drain(&mut ctx);
        let p: Vec<u32> = (0..3).map(|i| k.find_get_page(ino, i).unwrap()).collect();
        for &q in &p {
            k.mm.pages.clear(q, PG_REFERENCED);
        }
        k.mm.pages.clear(p[0], PG_YOUNG); // not used since reclaim looked
        k.mm.pages.set(p[2], PG_REFERENCED); // kept once by reclaim, used again
        let active_before = k.mm.vm.get(Ev::Pgactivate);
        k.unmap_mapping(&mut ctx, ino);
        assert!(p.iter().all(|&q| !k.mm.pages.test(q, PG_MAPPED)));
        assert!(!k.mm.pages.test(p[0], PG_REFERENCED) && !k.mm.pages.test(p[0], PG_ACTIVE));
        assert!(k.mm.pages.test(p[1], PG_REFERENCED) && !k.mm.pages.test(p[1], PG_ACTIVE));
        assert!(k.mm.pages.test(p[2], PG_ACTIVE));
        assert_eq!(k.mm.vm.get(Ev::Pgactivate), active_before + 1);
    }

    #[test]
    fn readahead_windows_stay_within_half_the_nodes_inactive_and_free_pages() {
        // max_sane_readahead: min(window, (inactive file + free) / 2) of the local node.
        let mut k = boot(0);
        let free: i64 = k.mm.zones.iter().map(|z| z.free_pages).sum();
        assert_eq!(k.max_sane_readahead(0, 32), 32);
        assert_eq!(k.max_sane_readahead(0, u64::MAX), free as u64 / 2);
        for z in k.mm.zones.iter_mut() {
            z.free_pages = 0;
        }
        assert_eq!(k.max_sane_readahead(0, 32), 0, "nothing free, nothing inactive: no window");
    }

    /// 3.0's NR_FREE_PAGES drift: a CPU's refill of its per-cpu list leaves
    /// its delta unfolded until it passes the threshold, so the allocator's
    /// check (zone_page_state) can pass while the exact count is below the
    /// mark; kswapd's check (zone_watermark_ok_safe) reads the exact count
    /// below percpu_drift_mark. kswapd awake lowers the threshold.
    #[test]
    fn free_pages_drift_per_cpu_until_folded() {
        let mut k = one_node(24, json!([{"name": "DMA32", "present_pages": 131072}]),
            json!({"name": "k", "era": "3.0", "zlc": "after-first-zone"}));
        let z = &k.mm.zones[0];
        // 2 x fls(24) x (1 + fls(512 MiB / 128 MiB)) = 40; (low - min) / 24 = 7.
        assert_eq!((z.normal_threshold, z.pressure_threshold, z.stat_threshold), (40, 7, 40));
        assert_eq!(z.percpu_drift_mark, z.wmark_high + 24 * 40);
        assert_eq!(k.mm.zone_free_state(0), z.free_pages);
        // kswapd woken from its full sleep takes the pressure threshold;
        // going back to full sleep (its nap finds the node balanced: all
        // memory is free) restores the normal one.
        let pid = k.kswapd[0].pid;
        let mut kctx = Ctx { cpu: 0, pid, ..Default::default() };
        assert!(matches!(k.kswapd[0].state, KsState::Sleeping));
        k.kswapd_step(0, &mut kctx);
        assert_eq!(k.mm.zones[0].stat_threshold, 7);
        k.kswapd[0].state = KsState::Napping;
        k.kswapd_step(0, &mut kctx);
        assert!(matches!(k.kswapd[0].state, KsState::Sleeping));
        assert_eq!(k.mm.zones[0].stat_threshold, 40);
        let mut ctx = Ctx { cpu: 0, ..Default::default() };
        let batch = k.mm.zones[0].pcp_batch as i64;
        assert_eq!(batch, 31);
        let before = k.mm.zones[0].free_pages;
        k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
        assert_eq!(k.mm.zones[0].free_pages, before - batch);
        assert_eq!(k.mm.zone_free_state(0), before, "the refill is still in CPU 0's delta");
        for _ in 0..batch {
            k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
        }
        assert_eq!(k.mm.zone_free_state(0), k.mm.zones[0].free_pages, "-62 passed -40: folded");
        // The 30 left on the list, then the next refill: unfolded again.
        for _ in 0..batch {
            k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
        }
        assert_eq!(k.mm.zone_free_state(0), k.mm.zones[0].free_pages + batch);
        k.mm.refresh_cpu_vm_stats();
        assert_eq!(k.mm.zone_free_state(0), k.mm.zones[0].free_pages, "vmstat_update folds every delta");
        // Frees on CPU 2: its per-cpu list reaches pcp_high and gives a
        // batch back to the buddy; the counter lags below the exact count.
        let mut ctx2 = Ctx { cpu: 2, ..Default::default() };
        let mut taken = Vec::new();
        for _ in 0..k.mm.zones[0].pcp_high {
            taken.push(k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap());
        }
        k.mm.refresh_cpu_vm_stats();
        for p in taken {
            k.mm.free_pages(&mut ctx2, p, 0);
            let d = k.mm.free_diff[2];
            assert!((0..=40).contains(&d));
        }
        assert_eq!(k.mm.free_diff[2], batch as i32);
        assert_eq!(k.mm.zone_free_state(0), k.mm.zones[0].free_pages - batch, "CPU 2's returned batch not folded yet");
        k.mm.refresh_cpu_vm_stats();
        // CPU 1 refills once and keeps its delta; then CPU 0 allocates down
        // to the low mark: the counter stays at least a batch above the
        // exact count, so the allocator's check passes where kswapd's fails.
        let mut ctx1 = Ctx { cpu: 1, ..Default::default() };
        k.mm.buffered_rmqueue(&mut ctx1, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
        let low = k.mm.zones[0].wmark_low;
        let mut seen = false;
        while k.mm.zones[0].free_pages > low - 2 * batch {
            k.mm.buffered_rmqueue(&mut ctx, 0, 0, crate::mm::MIGRATE_MOVABLE).unwrap();
            seen |= k.mm.zone_watermark_ok(0, 0, low, 0, 0) && !k.mm.zone_watermark_ok_safe(0, 0, low, 0, 0);
        }
        assert!(seen);
        let diffs: i64 = (0..24).map(|c| k.mm.free_diff[c] as i64).sum();
        assert_eq!(diffs, k.mm.zones[0].free_unfolded);
    }
}
