//! Thin PyO3 bindings: `mmtwin._core.run(spec_json) -> result_json`.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Once};
use std::time::Duration;

static QUIET: Once = Once::new();

/// Run one simulation. Raises ValueError("field: message") on a bad spec
/// and RuntimeError("engine: internal error: ...") if the engine panics (a
/// bug: the panic's own message is kept, the default hook's output is not).
///
/// The engine runs on its own thread without the GIL; this thread wakes
/// every 100 ms to let Python handle signals, so Ctrl-C stops the run
/// (KeyboardInterrupt) instead of waiting for it to finish.
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let spec = spec_json.to_owned();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("mmtwin-engine".into())
        .stack_size(64 << 20)
        .spawn(move || {
            let out = std::panic::catch_unwind(|| mmtwin_core::run_json_cancellable(&spec, Some(&flag)));
            let _ = tx.send(out);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("engine: internal error: cannot start its thread: {e}")))?;
    // The receiver goes into each wait and comes back out (it is Send,
    // not Sync).
    let mut rx = rx;
    let out = loop {
        let (back, got) = py.detach(move || {
            let got = rx.recv_timeout(Duration::from_millis(100));
            (rx, got)
        });
        rx = back;
        match got {
            Ok(out) => break out,
            Err(RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    let _ = py.detach(move || rx.recv().is_ok());
                    let _ = worker.join();
                    return Err(signal);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("engine: internal error: its thread ended without a result; please report it with the spec"));
            }
        }
    };
    let _ = worker.join();
    match out {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            let line = what.lines().next().unwrap_or("panic");
            Err(PyRuntimeError::new_err(format!("engine: internal error: {line}; please report it with the spec")))
        }
    }
}

/// The engine's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
