//! /proc snapshots (snapshot.rs): exact state after boot, consistency of
//! the buddy counts at any time, the periodic cap, no effect on the run,
//! and the spec's errors.

use mmtwin_core::spec::parse;
use serde_json::{json, Value};

fn machine(nodes: usize, cpus: u32, zones: Value, reserved: u64) -> Value {
    let dist: Vec<Vec<u32>> = (0..nodes).map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 }).collect()).collect();
    let node = json!({"cpus": cpus, "zones": zones, "reserved_pages": reserved});
    json!({"name": "test", "page_size": 4096, "cache_line": 64, "hz": 100,
           "nodes": vec![node; nodes], "distance": dist,
           "cost": {"fault_ns": 1000, "clear_ns_per_kib": 100, "clear_remote_ns_per_kib": 200, "line_miss_ns": 100, "line_hit_ns": 1, "buddy_page_ns": 10, "user_store_ns": 50}})
}

fn spec(m: Value, era: &str, pages: u64, threads: u32, snapshots: Value) -> Value {
    json!({"machine": m, "kernel": {"name": era, "era": era, "zlc": "none"},
           "workload": {"kind": "memhog", "bytes": pages * 4096, "threads": threads},
           "snapshots": snapshots})
}

fn run(v: &Value) -> Value {
    mmtwin_core::run(&parse(&v.to_string()).expect("valid spec")).expect("run")
}

fn err(v: &Value) -> String {
    parse(&v.to_string()).err().expect("rejected").to_string()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

#[test]
fn boot_state_is_exact() {
    // DMA 4096 pages at pfn 0, NORMAL 8192 from pfn 4096 with 100 pages reserved at its top.
    let m = machine(1, 2, json!([{"name": "DMA", "present_pages": 4096}, {"name": "NORMAL", "present_pages": 8192}]), 100);
    let r = run(&spec(m, "3.0", 64, 1, json!({"at_ms": [], "every_ms": null, "max_periodic": 4})));
    let snaps = r["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 2, "start and end only");
    let s0 = &snaps[0];
    assert_eq!(s0["kind"], "start");
    assert_eq!(s0["t_ns"], 0);
    let dma = &s0["zones"][0];
    assert_eq!(dma["zone"], "DMA");
    assert_eq!(dma["start_pfn"], 0);
    // 4096 pages in aligned blocks of 1024 (MAX_ORDER 11), all movable.
    assert_eq!(dma["nr_free"], json!([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]));
    assert_eq!(dma["free_by_type"], json!([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]]));
    assert_eq!(dma["pageblocks"], json!([0, 0, 8]));
    assert_eq!(dma["free"], 4096);
    assert_eq!(dma["managed"], 4096);
    let nor = &s0["zones"][1];
    assert_eq!(nor["zone"], "NORMAL");
    assert_eq!(nor["start_pfn"], 4096);
    assert_eq!((u(&nor["spanned"]), u(&nor["present"]), u(&nor["managed"])), (8192, 8192, 8092));
    // [4096, 12188): 7 blocks of 1024 (to 11264), then 924 = 512 + 256 + 128 + 16 + 8 + 4.
    assert_eq!(nor["nr_free"], json!([0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 7]));
    assert_eq!(nor["free"], 8092);
    assert_eq!(nor["pageblocks"], json!([0, 0, 16]));
    assert_eq!(nor["pcp_count"], json!([0, 0]));
    assert_eq!(nor["vm_stat"]["nr_free_pages"], 8092);
    assert_eq!(nor["all_unreclaimable"], false);
    // Nothing allocated yet: the counters are those of a machine just booted.
    assert_eq!(s0["vmstat"]["nr_free_pages"], 4096 + 8092);
    assert_eq!(s0["vmstat"]["pgalloc_normal"], 0);
    assert_eq!(s0["vmstat"], r["vmstat_start"]);
    // The end snapshot holds the result's counters.
    let end = snaps.last().unwrap();
    assert_eq!(end["kind"], "end");
    assert_eq!(end["vmstat"], r["vmstat"]);
}

fn check_buddy(s: &Value) {
    for z in s["zones"].as_array().unwrap() {
        let nr_free: Vec<u64> = z["nr_free"].as_array().unwrap().iter().map(u).collect();
        let pages: u64 = nr_free.iter().enumerate().map(|(o, n)| n << o).sum();
        assert_eq!(pages as i64, z["free"].as_i64().unwrap(), "sum nr_free << order = free pages, t={}", s["t_ns"]);
        assert_eq!(z["vm_stat"]["nr_free_pages"], z["free"]);
        let by_type = z["free_by_type"].as_array().unwrap();
        for (o, n) in nr_free.iter().enumerate() {
            let sum: u64 = by_type.iter().map(|t| u(&t[o])).sum();
            assert_eq!(sum, *n, "order {o}: the migrate types sum to nr_free");
        }
        let blocks: u64 = z["pageblocks"].as_array().unwrap().iter().map(u).sum();
        if !by_type.is_empty() && by_type.len() > 1 {
            assert_eq!(blocks, u(&z["spanned"]).div_ceil(512));
        }
    }
}

#[test]
fn buddy_counts_are_consistent_at_every_snapshot() {
    for era in ["2.6.18", "3.0", "4.11"] {
        let m = machine(2, 2, json!([{"name": "DMA32", "present_pages": 3000}, {"name": "NORMAL", "present_pages": 5000}]), 64);
        let r = run(&spec(m, era, 12000, 2, json!({"at_ms": [1, 2, 3], "every_ms": 1, "max_periodic": 8})));
        let snaps = r["snapshots"].as_array().unwrap();
        assert!(snaps.len() >= 5, "{era}: {} snapshots", snaps.len());
        let mut last = 0;
        for s in snaps {
            let t = u(&s["t_ns"]);
            assert!(t >= last, "in time order");
            last = t;
            check_buddy(s);
            if era == "2.6.18" {
                assert_eq!(s["zones"][0]["free_by_type"].as_array().unwrap().len(), 1, "no migrate types in 2.6.18");
            }
        }
        let ats: Vec<u64> = snaps.iter().filter(|s| s["kind"] == "at").map(|s| u(&s["t_ns"])).collect();
        assert_eq!(ats, vec![1_000_000, 2_000_000, 3_000_000], "{era}");
        // The memory hog allocated: some snapshot differs from the start.
        assert_ne!(snaps[0]["zones"], snaps[snaps.len() - 1]["zones"]);
    }
}

#[test]
fn periodic_snapshots_are_capped_and_thinned() {
    let m = machine(1, 1, json!([{"name": "NORMAL", "present_pages": 32768}]), 0);
    let r = run(&spec(m, "3.0", 24000, 1, json!({"every_ms": 1, "max_periodic": 5})));
    let elapsed_ms = r["times"]["elapsed_s"].as_f64().unwrap() * 1000.0;
    assert!(elapsed_ms > 20.0, "the run is long enough to thin: {elapsed_ms} ms");
    let periodic: Vec<u64> = r["snapshots"].as_array().unwrap().iter().filter(|s| s["kind"] == "periodic").map(|s| u(&s["t_ns"])).collect();
    assert!(!periodic.is_empty() && periodic.len() <= 5, "{periodic:?}");
    // Evenly spaced by a power-of-two multiple of the period.
    let step = periodic[0];
    assert!((step / 1_000_000).is_power_of_two() && step % 1_000_000 == 0, "{periodic:?}");
    for (i, t) in periodic.iter().enumerate() {
        assert_eq!(*t, step * (i as u64 + 1), "{periodic:?}");
    }
    assert!(step * (periodic.len() as u64 + 1) * 2 > elapsed_ms as u64 * 1_000_000 / 2, "covers the run: {periodic:?}");
}

#[test]
fn snapshots_change_nothing_else() {
    let m = machine(2, 1, json!([{"name": "NORMAL", "present_pages": 4096}]), 0);
    let mut plain = spec(m.clone(), "3.0", 6000, 2, Value::Null);
    plain.as_object_mut().unwrap().remove("snapshots");
    let a = run(&plain);
    let mut b = run(&spec(m, "3.0", 6000, 2, json!({"at_ms": [0, 5], "every_ms": 2, "max_periodic": 3})));
    assert!(a.get("snapshots").is_none());
    b.as_object_mut().unwrap().remove("snapshots");
    assert_eq!(a, b);
}

#[test]
fn snapshot_times_after_the_end_are_not_taken() {
    let m = machine(1, 1, json!([{"name": "NORMAL", "present_pages": 4096}]), 0);
    let r = run(&spec(m, "3.0", 100, 1, json!({"at_ms": [0, 86_400_000]})));
    let kinds: Vec<&str> = r["snapshots"].as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["start", "at", "end"]);
}

#[test]
fn bad_snapshot_specs_name_the_field() {
    let m = machine(1, 1, json!([{"name": "NORMAL", "present_pages": 4096}]), 0);
    let e = err(&spec(m.clone(), "3.0", 10, 1, json!({"at_ms": [5, 5]})));
    assert_eq!(e, "snapshots.at_ms[1]: 5 is not after 5; the times must be strictly increasing");
    let e = err(&spec(m.clone(), "3.0", 10, 1, json!({"at_ms": [86_400_001]})));
    assert_eq!(e, "snapshots.at_ms[0]: 86400001 is not allowed; 0 to 86400000 simulated ms");
    let e = err(&spec(m.clone(), "3.0", 10, 1, json!({"every_ms": 0})));
    assert_eq!(e, "snapshots.every_ms: 0 is not allowed; 1 to 86400000 simulated ms, or null");
    let e = err(&spec(m.clone(), "3.0", 10, 1, json!({"every_ms": 10, "max_periodic": 0})));
    assert_eq!(e, "snapshots.max_periodic: 0 is not allowed; 1 to 4096");
    let e = err(&spec(m.clone(), "3.0", 10, 1, json!({"at_ms": (0..1025).collect::<Vec<u64>>()})));
    assert_eq!(e, "snapshots.at_ms: 1025 times is not allowed; at most 1024");
    let e = err(&spec(m, "3.0", 10, 1, json!({"every_ms": 10, "max_periodic": 1, "bogus": 1})));
    assert!(e.starts_with("spec: unknown field `bogus`"), "{e}");
    // A machine whose snapshots are large: 4096 CPUs on 64 nodes with 4 zones each.
    let zones = json!([{"name": "DMA", "present_pages": 64}, {"name": "DMA32", "present_pages": 64}, {"name": "NORMAL", "present_pages": 64}, {"name": "MOVABLE", "present_pages": 64}]);
    let big = machine(64, 64, zones, 0);
    let e = err(&spec(big, "3.0", 10, 1, json!({"every_ms": 10, "max_periodic": 4096})));
    // 8 x (27 + 6 x 7 + 64 + 256 zones x (4 x 11 + 64 + 4096 CPUs)) = 8610856 bytes; 256 MiB holds 31, less start and end.
    assert_eq!(e, "snapshots.max_periodic: 4096 is too many on this machine; at most 29 (a snapshot takes up to 8610856 bytes, 256 MiB for all of a run's)");
}

#[test]
fn times_up_to_the_end_are_taken_even_after_the_last_event() {
    // Two threads on two CPUs: the run ends (its last task's exit) a while after the last event the loop ran.
    let m = machine(1, 2, json!([{"name": "DMA", "present_pages": 4096}, {"name": "NORMAL", "present_pages": 8192}]), 100);
    let probe = run(&spec(m.clone(), "3.0", 3000, 2, json!({})));
    let end_ns = u(&probe["snapshots"][1]["t_ns"]);
    let end_ms = end_ns / 1_000_000;
    assert!(end_ms >= 1, "the run lasts at least a millisecond: {end_ns} ns");
    let r = run(&spec(m, "3.0", 3000, 2, json!({"at_ms": [end_ms], "every_ms": 1})));
    let snaps = r["snapshots"].as_array().unwrap();
    let at: Vec<&Value> = snaps.iter().filter(|s| s["kind"] == "at").collect();
    assert_eq!(at.len(), 1, "the last whole millisecond of the run is in it");
    let periodic = snaps.iter().filter(|s| s["kind"] == "periodic").count() as u64;
    assert_eq!(periodic, end_ms, "one a millisecond up to the end");
    let end = snaps.last().unwrap();
    assert_eq!(end["kind"], "end");
    assert_eq!(u(&end["t_ns"]), end_ns);
}
