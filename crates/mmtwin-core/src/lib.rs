//! mmtwin-core: a deterministic, discrete-event simulation of the Linux
//! kernel's memory manager. Pure: no I/O, no globals, no wall clock in the
//! results. See docs/architecture.md for the module map.

pub mod alloc;
pub mod backing_dev;
pub mod block;
pub mod buffer;
pub mod check;
pub mod cost;
pub mod filemap;
pub mod fs;
pub mod fs_writeback;
pub mod jbd2;
pub mod kernel;
pub mod memory;
pub mod mm;
pub mod page;
pub mod page_alloc;
pub mod page_writeback;
pub mod sched;
pub mod slab;
pub mod snapshot;
pub mod spec;
pub mod swap;
pub mod swapfile;
pub mod trace;
pub mod vfs;
pub mod vmscan;
pub mod vmstat;
pub mod workload;

pub use spec::{parse, Spec, SpecError};

/// Run one specification (JSON text) and return the result as JSON text
/// with a `perf` block (the only non-deterministic part) appended.
pub fn run_json(spec_json: &str) -> Result<String, SpecError> {
    run_json_cancellable(spec_json, None)
}

/// As [`run_json`]; stops with SpecError("engine: interrupted") soon after
/// `cancel` becomes true (the Python binding sets it on Ctrl-C).
pub fn run_json_cancellable(spec_json: &str, cancel: Option<&std::sync::atomic::AtomicBool>) -> Result<String, SpecError> {
    let spec = parse(spec_json)?;
    let t0 = std::time::Instant::now();
    let (mut result, events) = kernel::run_cancellable(&spec, cancel)?;
    let wall = t0.elapsed().as_secs_f64();
    if let serde_json::Value::Object(map) = &mut result {
        let eps = if wall > 0.0 { events as f64 / wall } else { 0.0 };
        map.insert("perf".into(), serde_json::json!({ "wall_s": wall, "events_per_s": eps }));
    }
    Ok(result.to_string())
}

/// Run a parsed specification; the result carries no wall-clock data.
pub fn run(spec: &Spec) -> Result<serde_json::Value, SpecError> {
    Ok(kernel::run(spec)?.0)
}
