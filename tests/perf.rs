//! The suite: one libtest-mimic trial per server × entry × sweep step.

fn main() {}
