//! Whether a proposed threshold replaces the old one.

use dfx_core::baseline::Direction;
use serde::Serialize;

/// What happens to one threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// No old threshold: the proposed one is added.
    Add,
    /// Tighter by more than the tolerance: replaced.
    Tighten,
    /// Looser by more than the tolerance, and loosening was allowed: replaced.
    Loosen,
    /// Within the tolerance of the old one: kept.
    KeepWithinTolerance,
    /// Looser by more than the tolerance, loosening not allowed: kept.
    KeepWouldLoosen,
}

impl Decision {
    /// Whether the proposed value is written.
    pub fn writes(self) -> bool {
        matches!(self, Decision::Add | Decision::Tighten | Decision::Loosen)
    }

    /// Table text.
    pub fn label(self) -> &'static str {
        match self {
            Decision::Add => "add",
            Decision::Tighten => "tighten",
            Decision::Loosen => "loosen (allowed)",
            Decision::KeepWithinTolerance => "keep (within tolerance)",
            Decision::KeepWouldLoosen => "keep (would loosen; --allow-loosen)",
        }
    }
}

/// Decides for one threshold; returns the decision and `(proposed − old) / old`.
pub fn decide(
    old: Option<f64>,
    proposed: f64,
    direction: Direction,
    tolerance: f64,
    allow_loosen: bool,
) -> (Decision, Option<f64>) {
    let Some(old) = old else {
        return (Decision::Add, None);
    };
    let rel = if old != 0.0 {
        (proposed - old) / old.abs()
    } else {
        f64::INFINITY.copysign(proposed - old)
    };
    // positive = looser: a higher ceiling or a lower floor
    let looser = match direction {
        Direction::LowerIsBetter => rel,
        Direction::HigherIsBetter => -rel,
    };
    let decision = if looser < -tolerance {
        Decision::Tighten
    } else if looser > tolerance {
        if allow_loosen {
            Decision::Loosen
        } else {
            Decision::KeepWouldLoosen
        }
    } else {
        Decision::KeepWithinTolerance
    };
    (decision, Some(rel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    #[test]
    fn keeps_unless_tighter_beyond_tolerance() {
        assert_eq!(
            decide(None, 10.0, LowerIsBetter, 0.05, false).0,
            Decision::Add
        );
        assert_eq!(
            decide(Some(100.0), 90.0, LowerIsBetter, 0.05, false).0,
            Decision::Tighten
        );
        assert_eq!(
            decide(Some(100.0), 96.0, LowerIsBetter, 0.05, false).0,
            Decision::KeepWithinTolerance
        );
        assert_eq!(
            decide(Some(100.0), 104.0, LowerIsBetter, 0.05, false).0,
            Decision::KeepWithinTolerance
        );
        assert_eq!(
            decide(Some(100.0), 120.0, LowerIsBetter, 0.05, false).0,
            Decision::KeepWouldLoosen
        );
        assert_eq!(
            decide(Some(100.0), 120.0, LowerIsBetter, 0.05, true).0,
            Decision::Loosen
        );
        // floors: higher is tighter
        assert_eq!(
            decide(Some(40.0), 44.0, HigherIsBetter, 0.05, false).0,
            Decision::Tighten
        );
        assert_eq!(
            decide(Some(40.0), 30.0, HigherIsBetter, 0.05, false).0,
            Decision::KeepWouldLoosen
        );
        let (_, rel) = decide(Some(40.0), 30.0, HigherIsBetter, 0.05, true);
        assert!((rel.unwrap() + 0.25).abs() < 1e-12);
    }
}
