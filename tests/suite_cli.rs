//! Tests of the suite binary's command line.

fn main() {}
