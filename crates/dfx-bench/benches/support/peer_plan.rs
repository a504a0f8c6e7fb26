//! What the peer benchmark runs: its clients and its scenarios.

use dfx_core::plan::StepKind;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Client {
    NativePooled,
    NativeFresh,
    /// The floor client: at one stream `support/floor_client.rs` (blocking std sockets), in
    /// the open loops `support/floor_open.rs` (one thread, epoll, no runtime).
    FloorPooled,
    FloorFresh,
    Vllm,
}

impl Client {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Client::NativePooled => "native, pooled",
            Client::NativeFresh => "native, fresh",
            Client::FloorPooled => "floor, pooled",
            Client::FloorFresh => "floor, fresh",
            Client::Vllm => "vllm bench (fresh)",
        }
    }

    /// Whether this client runs `s` (the floor client: one stream, or an open loop; a
    /// floor at 64 or 256 streams would be this crate's client again).
    pub(crate) fn runs(self, s: &Scenario) -> bool {
        let floor_runs = match s.kind {
            StepKind::Concurrency { max_concurrency } => max_concurrency.get() == 1,
            StepKind::RequestRate { .. } => true,
        };
        !matches!(self, Client::FloorPooled | Client::FloorFresh) || floor_runs
    }
}

#[derive(Clone)]
pub(crate) struct Scenario {
    pub(crate) name: String,
    pub(crate) kind: StepKind,
    /// The two request counts of each client run pair (marginal CPU = difference).
    pub(crate) n: (u64, u64),
    pub(crate) warmups: u32,
    /// The one CPU the client runs on (scale mode), else wherever the kernel puts it.
    pub(crate) pin: Option<usize>,
}

pub(crate) fn kind_arg(k: StepKind) -> String {
    match k {
        StepKind::Concurrency { max_concurrency } => format!("c={max_concurrency}"),
        StepKind::RequestRate { request_rate } => format!("r={request_rate}"),
    }
}

pub(crate) fn parse_kind(s: &str) -> StepKind {
    if let Some(c) = s.strip_prefix("c=") {
        StepKind::Concurrency {
            max_concurrency: c.parse().unwrap(),
        }
    } else {
        StepKind::RequestRate {
            request_rate: s.strip_prefix("r=").unwrap().parse().unwrap(),
        }
    }
}

pub(crate) fn scenarios(mode: &str) -> Vec<Scenario> {
    let closed = |c: u32| StepKind::Concurrency {
        max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
    };
    let open = |r: f64| StepKind::RequestRate { request_rate: r };
    if mode == "smoke" {
        return vec![
            Scenario {
                name: "closed loop c=2".into(),
                kind: closed(2),
                n: (2, 4),
                warmups: 2,
                pin: None,
            },
            Scenario {
                name: "closed loop c=1".into(),
                kind: closed(1),
                n: (1, 2),
                warmups: 1,
                pin: None,
            },
            Scenario {
                name: "open loop 20 req/s".into(),
                kind: open(20.0),
                n: (2, 4),
                warmups: 1,
                pin: None,
            },
        ];
    }
    let q = if mode == "quick" { 4 } else { 1 };
    vec![
        Scenario {
            name: "closed loop c=1".into(),
            kind: closed(1),
            n: (20 / q.min(2), 60 / q.min(2)),
            warmups: 2,
            pin: None,
        },
        Scenario {
            name: "closed loop c=64".into(),
            kind: closed(64),
            n: (256 / q, 1024 / q),
            warmups: 64,
            pin: None,
        },
        Scenario {
            name: "closed loop c=256".into(),
            kind: closed(256),
            n: (1024 / q, 4096 / q),
            warmups: 256,
            pin: None,
        },
        Scenario {
            name: "open loop 50 req/s".into(),
            kind: open(50.0),
            n: (100 / q, 400 / q),
            warmups: 2,
            pin: None,
        },
        Scenario {
            name: "open loop 200 req/s".into(),
            kind: open(200.0),
            n: (400 / q, 1600 / q),
            warmups: 2,
            pin: None,
        },
    ]
}
