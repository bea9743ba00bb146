//! Thin PyO3 bindings: `mmtwin._core.run(spec_json) -> result_json`.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Once;

static QUIET: Once = Once::new();

/// Run one simulation. Raises ValueError("field: message") on a bad spec
/// and RuntimeError("engine: internal error: ...") if the engine panics (a
/// bug: the panic's own message is kept, the default hook's output is not).
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let spec = spec_json.to_owned();
    let out = py.detach(move || std::panic::catch_unwind(|| mmtwin_core::run_json(&spec)));
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
