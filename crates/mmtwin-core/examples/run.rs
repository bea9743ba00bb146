//! Run one engine specification: `cargo run --release --example run -- spec.json`.
fn main() {
    let path = std::env::args().nth(1).expect("usage: run SPEC.json");
    let text = std::fs::read_to_string(&path).expect("readable spec");
    match mmtwin_core::run_json(&text) {
        Ok(out) => println!("{out}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
