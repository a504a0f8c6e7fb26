//! Prints two result files of the same sweep step side by side: native vs `vllm bench`.
//!
//! ```text
//! cargo run -q -p dfx-bench --example parity -- [--all] [--tolerance PCT] [--strict] NATIVE.json VLLM.json
//! ```
//! Ratio = native / vllm. Rows further than the tolerance (default 10 %) from 1, or present
//! on one side only, are marked `!`; with `--strict` any marked row makes the exit status 1.

use std::path::Path;
use std::process::ExitCode;

use dfx_bench::external::parity::{parity_rows, render};
use dfx_core::result::ResultDoc;

const USAGE: &str =
    "usage: parity [--all] [--tolerance PCT] [--strict] NATIVE_RESULT.json VLLM_RESULT.json";

fn read(path: &Path) -> Result<ResultDoc, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not a JSON object: {e}", path.display()))
}

fn main() -> ExitCode {
    let (mut all, mut strict, mut tolerance, mut files) = (false, false, 10.0_f64, Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--all" => all = true,
            "--strict" => strict = true,
            "--tolerance" => match args.next().and_then(|v| v.parse().ok()) {
                Some(t) if t >= 0.0 => tolerance = t,
                _ => {
                    eprintln!("--tolerance needs a non-negative percentage\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => files.push(a),
        }
    }
    let [native, vllm] = files.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let (native_doc, vllm_doc) = match (read(Path::new(native)), read(Path::new(vllm))) {
        (Ok(n), Ok(v)) => (n, v),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("parity: {e}");
            return ExitCode::from(2);
        }
    };
    for (label, doc) in [("native", &native_doc), ("vllm", &vllm_doc)] {
        let source = doc
            .get("result_source")
            .and_then(|v| v.as_str())
            .unwrap_or("?");
        println!(
            "{label:>6}: {} (result_source {source})",
            if label == "native" { native } else { vllm }
        );
    }
    let rows = parity_rows(&native_doc, &vllm_doc, all);
    print!("{}", render(&rows, tolerance / 100.0));
    let marked = rows.iter().filter(|r| r.differs(tolerance / 100.0)).count();
    println!(
        "{marked} of {} metrics differ by more than {tolerance} %",
        rows.len()
    );
    if strict && marked > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
