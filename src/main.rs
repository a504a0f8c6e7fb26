//! `dfx-perf`: the commands that are not tests (deploy lookup, reports, compare,
//! recalibrate).

fn main() -> anyhow::Result<()> {
    anyhow::bail!("dfx-perf: no commands yet")
}
