//! The timeline's sampled event counters (cumulative from the start of the
//! run, ending at the /proc/vmstat delta), its thinning and memory bound, and
//! the ftrace latency histograms (their totals are the ftrace summary's).

use mmtwin_core::kernel::{NR_TL_COUNTERS, TIMELINE_CAP, TIMELINE_COUNTERS};
use mmtwin_core::spec::parse;
use mmtwin_core::trace::{LatencyHist, LATENCY_BINS};
use serde_json::{json, Value};

/// One node of 2 CPUs and `pages` pages; ext4 on sda, 128 MiB of swap on sdb.
fn swap_box(pages: u64) -> Value {
    let dev = |name: &str| json!({"name": name, "disks": 1, "bandwidth_mib_s": 100, "access_us": 8000,
                                  "nr_requests": 128, "max_sectors_kib": 512, "size_mib": 10000});
    json!({
        "name": "swapbox", "page_size": 4096, "cache_line": 64, "hz": 250,
        "nodes": [{"cpus": 2, "zones": [{"name": "DMA32", "present_pages": pages}], "reserved_pages": 64}],
        "distance": [[10]],
        "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                 "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80},
        "storage": {"devices": [dev("sda"), dev("sdb")], "fs": {"kind": "ext4", "device": 0, "size_mib": 9000},
                    "swap": {"device": 1, "size_mib": 128}}
    })
}

/// Two passes of a 96 MiB hog on the 64 MiB box: swap out and in, direct
/// reclaim, kswapd, major faults.
fn run(era: &str, sample_ms: u64) -> Value {
    let spec = json!({"machine": swap_box(16384), "kernel": {"name": era, "era": era, "zlc": if era == "4.11" { "none" } else { "after-first-zone" }},
                      "workload": {"kind": "memhog", "bytes": 96u64 << 20, "threads": 2, "stride": 4096, "passes": 2},
                      "sample_ms": sample_ms});
    mmtwin_core::run(&parse(&spec.to_string()).unwrap()).unwrap()
}

/// End less start of the /proc/vmstat rows named `name` or `name_<zone>`.
fn delta(r: &Value, name: &str) -> u64 {
    let (v, v0) = (r["vmstat"].as_object().unwrap(), &r["vmstat_start"]);
    let rows: Vec<&String> = v.keys().filter(|k| *k == name || k.strip_prefix(name).is_some_and(|z| ["_dma", "_dma32", "_normal", "_movable"].contains(&z))).collect();
    assert!(!rows.is_empty(), "no vmstat row {name}");
    rows.iter().map(|k| v[*k].as_u64().unwrap() - v0[k.as_str()].as_u64().unwrap()).sum()
}

fn column(r: &Value, name: &str) -> Vec<u64> {
    r["timeline"][name].as_array().unwrap_or_else(|| panic!("no timeline column {name}")).iter().map(|x| x.as_u64().unwrap()).collect()
}

/// What each counter column must end at, by the era's /proc/vmstat.
fn expected_ends(r: &Value, era: &str) -> Vec<(&'static str, u64)> {
    let mut out = vec![
        ("pgpgin", delta(r, "pgpgin")),
        ("pgpgout", delta(r, "pgpgout")),
        ("pswpin", delta(r, "pswpin")),
        ("pswpout", delta(r, "pswpout")),
        ("pgscan_kswapd", delta(r, "pgscan_kswapd")),
        ("pgscan_direct", delta(r, "pgscan_direct")),
        ("allocstall", delta(r, "allocstall")),
        ("pgmajfault", delta(r, "pgmajfault")),
        ("nr_vmscan_write", delta(r, "nr_vmscan_write")),
        ("kswapd_wakeups", r["sim"]["kswapd_wakeups"].as_u64().unwrap()),
    ];
    if era == "4.11" {
        out.push(("pgsteal_kswapd", delta(r, "pgsteal_kswapd")));
        out.push(("pgsteal_direct", delta(r, "pgsteal_direct")));
    } else {
        // 3.0 prints pgsteal_<zone> summed over kswapd and direct reclaim, and kswapd_steal.
        let steal = column(r, "pgsteal_kswapd").last().unwrap() + column(r, "pgsteal_direct").last().unwrap();
        assert_eq!(steal, delta(r, "pgsteal"), "pgsteal_kswapd + pgsteal_direct");
        out.push(("pgsteal_kswapd", delta(r, "kswapd_steal")));
    }
    out
}

#[test]
fn counter_columns_start_at_zero_rise_and_end_at_the_vmstat_delta() {
    for era in ["3.0", "4.11"] {
        let r = run(era, 100);
        let n = r["timeline"]["t_s"].as_array().unwrap().len();
        assert!(n > 10, "{era}: {n} samples");
        assert_eq!(TIMELINE_COUNTERS.len(), NR_TL_COUNTERS);
        for name in TIMELINE_COUNTERS {
            let c = column(&r, name);
            assert_eq!(c.len(), n, "{era} {name}: one value per sample");
            assert_eq!(c[0], 0, "{era} {name}: counted from the start of the run");
            assert!(c.windows(2).all(|w| w[0] <= w[1]), "{era} {name}: a cumulative counter fell");
        }
        for (name, want) in expected_ends(&r, era) {
            assert_eq!(*column(&r, name).last().unwrap(), want, "{era} {name}: last sample against the vmstat delta");
        }
        // The run did what the columns are for.
        for name in ["pswpout", "pswpin", "pgscan_direct", "pgscan_kswapd", "allocstall", "pgmajfault", "kswapd_wakeups"] {
            assert!(*column(&r, name).last().unwrap() > 0, "{era}: no {name}");
        }
        // The free-pages rows keep their shape: a row per sample, a value per zone.
        let free = r["timeline"]["free_pages"].as_array().unwrap();
        assert_eq!(free.len(), n);
        assert!(free.iter().all(|row| row.as_array().unwrap().len() == 1));
    }
}

#[test]
fn thinning_keeps_every_column_with_its_time_and_doubles_the_period() {
    // 1 ms samples on a run of several simulated seconds: thinned (more than
    // TIMELINE_CAP samples taken), yet the columns stay aligned with t_s.
    let r = run("3.0", 1);
    let t: Vec<f64> = r["timeline"]["t_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let elapsed = r["times"]["elapsed_s"].as_f64().unwrap();
    assert!(elapsed * 1000.0 > 2.0 * TIMELINE_CAP as f64, "the run is too short to thin: {elapsed} s");
    assert!(t.len() <= TIMELINE_CAP + 1 && t.len() > TIMELINE_CAP / 2, "{} samples", t.len());
    // Evenly spaced (but the final sample, at the end of the run), at a power of two of 1 ms.
    let gap = t[1] - t[0];
    let ms = (gap * 1000.0).round() as u64;
    assert!(ms.is_power_of_two() && ms >= 2, "gap {gap}");
    for w in t[..t.len() - 1].windows(2) {
        assert!(((w[1] - w[0]) - gap).abs() < 1e-9, "uneven gap {} at {}", w[1] - w[0], w[0]);
    }
    assert!(*t.last().unwrap() >= t[t.len() - 2]);
    // Every column kept the samples t_s kept: one value each, still a counter, same end.
    for name in TIMELINE_COUNTERS {
        let c = column(&r, name);
        assert_eq!(c.len(), t.len(), "{name}");
        assert_eq!(c[0], 0, "{name}");
        assert!(c.windows(2).all(|w| w[0] <= w[1]), "{name}");
    }
    for (name, want) in expected_ends(&r, "3.0") {
        assert_eq!(*column(&r, name).last().unwrap(), want, "{name}");
    }
    // Memory: the columns never grow past TIMELINE_CAP + 1 samples.
    let zones = 1u64;
    let bound = (TIMELINE_CAP as u64 + 1) * (8 * zones + 8 * (4 + NR_TL_COUNTERS as u64));
    let bytes = r["sim"]["timeline_bytes"].as_u64().unwrap();
    assert!(bytes <= bound, "{bytes} bytes > {bound}");
}

#[test]
fn latency_histograms_count_what_the_ftrace_summary_counts() {
    for era in ["3.0", "4.11"] {
        let r = run(era, 100);
        let ft = &r["ftrace"];
        let lat = &ft["latency"];
        let hist = |k: &str| -> (u64, u64, Vec<u64>) {
            let h = &lat[k];
            let bins: Vec<u64> = h["log2_us"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            (h["count"].as_u64().unwrap(), h["sum_us"].as_u64().unwrap(), bins)
        };
        let (n, sum, bins) = hist("direct_stall");
        assert_eq!(bins.len(), LATENCY_BINS);
        assert_eq!(bins.iter().sum::<u64>(), n);
        assert!(n > 0, "{era}: no direct reclaim stall");
        let unended = ft["vmscan"]["direct_reclaims_open"].as_u64().unwrap() + ft["vmscan"]["direct_reclaims_abandoned"].as_u64().unwrap();
        assert_eq!(n + unended, ft["vmscan"]["direct_reclaims"].as_u64().unwrap(), "{era}: a stall per direct reclaim that ended");
        assert_eq!(sum, ft["vmscan"]["direct_stall_us"].as_u64().unwrap(), "{era}");
        let cw = &ft["congestion_wait"];
        for (k, waited, us) in [("congestion_wait", "congest_waited", "congest_us"), ("wait_iff_congested", "conditional_waited", "conditional_us")] {
            let (n, sum, bins) = hist(k);
            assert_eq!(bins.iter().sum::<u64>(), n, "{era} {k}");
            assert_eq!(n, cw["direct"][waited].as_u64().unwrap() + cw["kswapd"][waited].as_u64().unwrap(), "{era} {k}");
            assert_eq!(sum, cw["direct"][us].as_u64().unwrap() + cw["kswapd"][us].as_u64().unwrap(), "{era} {k}");
        }
    }
}

#[test]
fn latency_bins_are_log2_microseconds() {
    assert_eq!(LatencyHist::bin(0), 0);
    assert_eq!(LatencyHist::bin(1), 1);
    assert_eq!(LatencyHist::bin(2), 2);
    assert_eq!(LatencyHist::bin(3), 2);
    assert_eq!(LatencyHist::bin(4), 3);
    assert_eq!(LatencyHist::bin(4000), 12); // 2^11 = 2048 <= 4000 < 4096
    assert_eq!(LatencyHist::bin((1 << 27) - 1), 27);
    assert_eq!(LatencyHist::bin(1 << 27), LATENCY_BINS - 1);
    assert_eq!(LatencyHist::bin(u64::MAX), LATENCY_BINS - 1);
    let mut h = LatencyHist::default();
    for us in [0, 5, 5, 100_000] {
        h.add(us);
    }
    assert_eq!((h.count, h.sum_us), (4, 100_010));
    assert_eq!((h.bins[0], h.bins[3], h.bins[17]), (1, 2, 1));
}
