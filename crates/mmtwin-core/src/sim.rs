//! The event loop: simulated tasks pinned to CPUs, advanced one kernel
//! entry at a time in simulated-time order, and the memory-hog workload.

use crate::alloc::{gfp, Task};
use crate::cost::Ctx;
use crate::mm::{Mm, NR_ZONE_TYPES};
use crate::spec::{Era, Spec, SpecError, ZONE_NAMES};
use crate::vmstat::{self, Ev, Gauges};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One memory-hog thread: allocates and touches its share, one store every
/// `stride` bytes, pinned to one CPU.
struct HogThread {
    cpu: usize,
    node: usize,
    pages_total: u64,
    pages_done: u64,
    clock: u64,
    user_ns: u64,
    sys_ns: u64,
    spin_ns: u64,
    remote_pages: u64,
    end_ns: Option<u64>,
    oom: bool,
}

pub struct Outcome {
    pub result: Value,
    pub events: u64,
}

pub fn run(spec: &Spec) -> Result<Outcome, SpecError> {
    let mut mm = Mm::boot(spec);
    mm.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at boot: {e}")))?;
    if spec.check {
        mm.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at boot: {e}")))?;
    }
    let w = &spec.workload;
    let nthreads = w.threads as usize;
    let page_size = spec.machine.page_size;
    let total_pages_wanted = w.bytes.div_ceil(page_size);
    let cpus: Vec<usize> = match &w.cpus {
        Some(list) => list.iter().map(|&c| c as usize).collect(),
        None => (0..nthreads).collect(),
    };
    let nnodes = mm.nodes.len();
    let mems: Vec<bool> = match &w.mems_allowed {
        Some(list) => {
            let mut m = vec![false; nnodes];
            for &n in list {
                m[n as usize] = true;
            }
            m
        }
        None => vec![true; nnodes],
    };
    let mut threads: Vec<HogThread> = (0..nthreads)
        .map(|i| {
            let share = total_pages_wanted / nthreads as u64 + u64::from((i as u64) < total_pages_wanted % nthreads as u64);
            HogThread {
                cpu: cpus[i],
                node: mm.cpu_node[cpus[i]],
                pages_total: share,
                pages_done: 0,
                clock: 0,
                user_ns: 0,
                sys_ns: 0,
                spin_ns: 0,
                remote_pages: 0,
                end_ns: None,
                oom: false,
            }
        })
        .collect();

    let cost = spec.machine.cost;
    let page_kib = page_size / 1024;
    let stores_per_page = page_size / w.stride;
    // One page-table page maps page_size / 8 ptes.
    let ptes_per_table = page_size / 8;
    let anon_gfp = if spec.kernel.era == Era::V2618 { gfp::GFP_HIGHUSER } else { gfp::GFP_HIGHUSER_MOVABLE } | gfp::ZERO;

    let sample_ns = spec.sample_ms * 1_000_000;
    let mut next_sample = 0u64;
    let mut t_s: Vec<f64> = Vec::new();
    let mut free_tl: Vec<Vec<i64>> = Vec::new();
    let mut samples_taken = 0u64;
    let mut full_checks = 0u64;

    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..nthreads).filter(|&i| threads[i].pages_total > 0).map(|i| Reverse((0u64, i))).collect();
    for t in threads.iter_mut().filter(|t| t.pages_total == 0) {
        t.end_ns = Some(0);
    }

    while let Some(Reverse((now, tid))) = heap.pop() {
        while now >= next_sample {
            t_s.push(next_sample as f64 / 1e9);
            free_tl.push(mm.zones.iter().map(|z| z.free_pages).collect());
            mm.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at t={}ns: {e}", next_sample)))?;
            if spec.check && samples_taken.is_power_of_two() {
                mm.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at t={}ns: {e}", next_sample)))?;
                full_checks += 1;
            }
            samples_taken += 1;
            next_sample += sample_ns;
        }
        let th = &mut threads[tid];
        let mut ctx = Ctx { cpu: th.cpu, node: th.node, now, sys: 0, spin: 0, user: 0 };
        mm.cache.enter(th.cpu);
        ctx.sys += cost.fault_ns;
        mm.vm.inc(Ev::Pgfault);
        let task = Task { mems_allowed: &mems, pf_memalloc: false };
        let mut ok = true;
        if th.pages_done.is_multiple_of(ptes_per_table) {
            match mm.alloc_pages(&mut ctx, &task, gfp::GFP_KERNEL | gfp::ZERO, 0, th.node) {
                Some((p, zi)) => {
                    mm.mark_kernel(p);
                    ctx.sys += clear_ns(&cost, page_kib, th.node == mm.zones[zi].node);
                }
                None => ok = false,
            }
        }
        if ok {
            match mm.alloc_pages(&mut ctx, &task, anon_gfp, 0, th.node) {
                Some((p, zi)) => {
                    let pnode = mm.zones[zi].node;
                    if pnode != th.node {
                        th.remote_pages += 1;
                    }
                    ctx.sys += clear_ns(&cost, page_kib, th.node == pnode);
                    mm.lru_cache_add_active(&mut ctx, p);
                    ctx.user += stores_per_page * cost.user_store_ns;
                    mm.sim.page_events += stores_per_page;
                    th.pages_done += 1;
                }
                None => ok = false,
            }
        }
        th.sys_ns += ctx.sys;
        th.user_ns += ctx.user;
        th.spin_ns += ctx.spin;
        th.clock = ctx.clock();
        if !ok {
            th.oom = true;
            th.end_ns = Some(th.clock);
        } else if th.pages_done == th.pages_total {
            th.end_ns = Some(th.clock);
        } else {
            heap.push(Reverse((th.clock, tid)));
        }
    }
    let end_ns = threads.iter().map(|t| t.end_ns.unwrap_or(t.clock)).max().unwrap_or(0);
    // The final sample at the end of the run.
    t_s.push(end_ns as f64 / 1e9);
    free_tl.push(mm.zones.iter().map(|z| z.free_pages).collect());
    mm.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at the end: {e}")))?;
    if spec.check {
        mm.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at the end: {e}")))?;
        full_checks += 1;
    }

    Ok(Outcome { result: build_result(spec, &mm, &threads, end_ns, t_s, free_tl, full_checks), events: mm.sim.page_events })
}

/// clear_page: a stream of stores at the local or the interconnect's rate.
fn clear_ns(cost: &crate::spec::CostSpec, page_kib: u64, local: bool) -> u64 {
    page_kib * if local { cost.clear_ns_per_kib } else { cost.clear_remote_ns_per_kib }
}

fn secs(ns: u64) -> f64 {
    // Round to the microsecond so the JSON text is stable and short.
    (ns / 1000) as f64 / 1e6
}

fn build_result(spec: &Spec, mm: &Mm, threads: &[HogThread], end_ns: u64, t_s: Vec<f64>, free_tl: Vec<Vec<i64>>, full_checks: u64) -> Value {
    let user: u64 = threads.iter().map(|t| t.user_ns).sum();
    let sys: u64 = threads.iter().map(|t| t.sys_ns).sum();
    let mut present = [false; NR_ZONE_TYPES];
    for z in &mm.zones {
        present[z.zt] = true;
    }
    let gauges = Gauges {
        nr_free_pages: mm.free_pages_total() as u64,
        nr_anon_pages: mm.census.lru + mm.census.pagevec,
        nr_page_table_pages: mm.census.kernel,
        nr_active: mm.zones.iter().map(|z| z.active.len as u64).sum(),
        nr_inactive: mm.zones.iter().map(|z| z.inactive.len as u64).sum(),
    };
    let mut vm = serde_json::Map::new();
    for (name, v) in vmstat::rows(spec.kernel.era, &mm.vm, &gauges, &present) {
        vm.insert(name.to_string(), json!(v));
    }
    let zones: Vec<Value> = mm
        .zones
        .iter()
        .map(|z| {
            json!({
                "node": z.node,
                "zone": ZONE_NAMES[z.zt],
                "present": z.present,
                "min": z.wmark_min,
                "low": z.wmark_low,
                "high": z.wmark_high,
                "lowmem_reserve": z.lowmem_reserve.to_vec(),
                "pcp_batch": z.pcp_batch,
                "pcp_high": z.pcp_high,
                "free_end": z.free_pages,
                "pgalloc": z.pgalloc,
                "numa_hit": z.numa[0],
                "numa_miss": z.numa[1],
                "numa_foreign": z.numa[2],
                "numa_local": z.numa[3],
                "numa_other": z.numa[4],
            })
        })
        .collect();
    let th: Vec<Value> = threads
        .iter()
        .map(|t| {
            json!({
                "cpu": t.cpu,
                "node": t.node,
                "pages": t.pages_done,
                "remote_pages": t.remote_pages,
                "user_s": secs(t.user_ns),
                "sys_s": secs(t.sys_ns),
                "spin_s": secs(t.spin_ns),
                "end_s": secs(t.end_ns.unwrap_or(t.clock)),
                "oom": t.oom,
            })
        })
        .collect();
    let s = &mm.sim;
    json!({
        "kernel": spec.kernel.name,
        "machine": spec.machine.name,
        "era": spec.kernel.era.name(),
        "zone_reclaim_mode": mm.zone_reclaim_mode,
        "min_free_kbytes": mm.min_free_kbytes,
        "times": { "user_s": secs(user), "sys_s": secs(sys), "elapsed_s": secs(end_ns) },
        "vmstat": Value::Object(vm),
        "threads": th,
        "zones": zones,
        "timeline": { "t_s": t_s, "free_pages": free_tl },
        "sim": {
            "zone_checks": s.zone_checks,
            "zlc_skips": s.zlc_skips,
            "zlc_setups": s.zlc_setups,
            "zlc_zaps": s.zlc_zaps,
            "zlc_marked_full": s.zlc_marked_full,
            "second_passes": s.second_passes,
            "zone_reclaim_calls": s.zone_reclaim_calls,
            "rmqueue_bulk": s.rmqueue_bulk,
            "lines_touched": mm.cache.lines_touched,
            "remote_lines": mm.cache.remote_lines,
            "lock_spin_s": secs(s.lock_spin_ns),
            "kswapd_wakeups": mm.vm.get(Ev::KswapdWake),
            "oom": threads.iter().any(|t| t.oom),
            "full_checks": full_checks,
            "state_bytes": mm.state_bytes(),
            "state_bytes_per_page": (mm.state_bytes() as f64 / mm.pages.len() as f64 * 100.0).round() / 100.0,
        },
        "events": s.page_events,
    })
}
