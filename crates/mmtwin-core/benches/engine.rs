//! Engine throughput: simulated page events per second.
//! `cargo bench -p mmtwin-core` (the full-scale 90 GB scenario on the
//! 28-node preset is `mmtwin bench`, which reads the TOML presets).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mmtwin_core::spec::parse;

fn numa_spec(nodes: usize, cpus_per_node: u32, pages_per_node: u64, bytes: u64, threads: u32, zlc: &str) -> String {
    let dist: Vec<Vec<u32>> = (0..nodes)
        .map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 + 2 * (a as i64 - b as i64).unsigned_abs() as u32 }).collect())
        .collect();
    let node = serde_json::json!({"cpus": cpus_per_node, "zones": [{"name": "DMA", "present_pages": pages_per_node}], "reserved_pages": 64});
    serde_json::json!({
        "machine": {"name": "bench", "page_size": 16384, "cache_line": 128, "hz": 1024,
                    "nodes": vec![node; nodes], "distance": dist,
                    "cost": {"fault_ns": 100000, "clear_ns_per_kib": 3000, "clear_remote_ns_per_kib": 6000, "line_miss_ns": 300, "line_hit_ns": 3, "buddy_page_ns": 200, "user_store_ns": 7000}},
        "kernel": {"name": "bench", "era": "2.6.18", "zlc": zlc},
        "workload": {"kind": "memhog", "bytes": bytes, "threads": threads}
    })
    .to_string()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("memhog");
    g.sample_size(10);
    for zlc in ["none", "after-first-zone"] {
        // 28 nodes x 64 MiB (16 KiB pages), 1.5 GiB hog on 19 threads.
        let spec = parse(&numa_spec(28, 2, 4096, 1536 << 20, 19, zlc)).unwrap();
        let events = mmtwin_core::kernel::run(&spec).unwrap().1;
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("28node-19threads-{zlc}"), |b| b.iter(|| mmtwin_core::kernel::run(&spec).unwrap().1));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
