//! Thin PyO3 bindings: `mmtwin._core.run(spec_json) -> result_json`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run one simulation. Raises ValueError("field: message") on a bad spec.
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec = spec_json.to_owned();
    let out = py.detach(move || std::panic::catch_unwind(|| mmtwin_core::run_json(&spec)));
    match out {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(_) => Err(PyValueError::new_err("engine: internal error (panic); please report with the spec")),
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
