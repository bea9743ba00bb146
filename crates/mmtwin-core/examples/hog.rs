//! Run a memory hog on a synthetic 28-node machine: `cargo run --release --example hog -- GB THREADS ZLC`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let gb: u64 = a.get(1).map(|s| s.parse().unwrap()).unwrap_or(12);
    let threads: u32 = a.get(2).map(|s| s.parse().unwrap()).unwrap_or(1);
    let zlc = a.get(3).cloned().unwrap_or_else(|| "none".into());
    let nodes = 28usize;
    let pages_per_node: u64 = (96u64 << 30) / 28 / 16384;
    let dist: Vec<Vec<u32>> = (0..nodes)
        .map(|x| (0..nodes).map(|y| if x == y { 10 } else { let h = ((x / 2) as i64 - (y / 2) as i64).unsigned_abs() as u32; 21 + 4 * (h.min(6)) }).collect())
        .collect();
    let node = serde_json::json!({"cpus": 2, "zones": [{"name": "DMA", "present_pages": pages_per_node}], "reserved_pages": 1500});
    let spec = serde_json::json!({
        "machine": {"name": "synthetic-altix", "page_size": 16384, "cache_line": 128, "hz": 1024,
                    "nodes": vec![node; nodes], "distance": dist,
                    "cost": {"fault_ns": 100000, "clear_ns_per_kib": 3000, "clear_remote_ns_per_kib": 6000, "line_miss_ns": 300, "line_hit_ns": 3, "buddy_page_ns": 200, "user_store_ns": 7000}},
        "kernel": {"name": zlc.clone(), "era": "2.6.18", "zlc": zlc},
        "workload": {"kind": "memhog", "bytes": gb << 30, "threads": threads}
    });
    let t0 = std::time::Instant::now();
    let out = mmtwin_core::run_json(&spec.to_string()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    eprintln!("wall {:.2}s", t0.elapsed().as_secs_f64());
    println!("{} {}", v["times"], v["sim"]);
    println!("perf {} events {}", v["perf"], v["events"]);
}
