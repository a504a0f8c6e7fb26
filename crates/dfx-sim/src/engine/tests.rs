use super::*;

const MS: f64 = 0.001;

fn cfg(codec_batch: usize) -> EngineConfig {
    slots_cfg(codec_batch, codec_batch)
}

fn slots_cfg(slots: usize, codec_batch: usize) -> EngineConfig {
    EngineConfig {
        talker: TalkerParams {
            step_base_s: 6.0 * MS,
            step_per_seq_s: 1.0 * MS,
            prefill_per_seq_s: 0.0,
            max_num_seqs: 64,
            inline_decode_s: 0.0,
        },
        codec: Some(CodecParams {
            step_base_s: 20.0 * MS,
            step_per_extra_chunk_s: 1.0 * MS,
            per_frame_s: 0.3 * MS,
            batch_efficiency: 1.0,
            max_num_seqs: slots,
            decode_batch: codec_batch,
            left_context_frames: 72,
            chunk_fifo: false,
        }),
        chunking: Chunking::default(),
        slowdown: 1.0,
        contention: 0.0,
    }
}

fn job(id: u64, frames: u32) -> Job {
    Job {
        id,
        frames,
        prefill_s: 25.0 * MS,
        ref_context_frames: 0,
        initial_chunk_frames: None,
    }
}

/// Runs jobs submitted at the given virtual times to completion.
fn run(cfg: EngineConfig, jobs: &[(VTime, Job)]) -> Vec<Emission> {
    let mut e = Engine::new(cfg);
    let mut out = Vec::new();
    for (at, j) in jobs {
        e.submit(*at, j.clone(), &mut out);
    }
    e.advance(VTime::MAX, &mut out);
    assert_eq!(e.next_event(), None);
    out
}

fn ns(ms: f64) -> VTime {
    secs(ms * MS)
}

#[test]
fn single_request_timeline() {
    let out = run(cfg(1), &[(0, job(1, 69))]);
    let sizes: Vec<u32> = out.iter().map(|e| e.frames).collect();
    assert_eq!(sizes, vec![1, 25, 25, 18]);
    assert!(out.last().unwrap().last && out.iter().filter(|e| e.last).count() == 1);
    // First chunk: prefill + one step (6 + 1 + 25 ms), then decode of 1 frame (20 + 0.3).
    assert_eq!(out[0].at, ns(32.0) + ns(20.3));
    // Second chunk closes at frame 26 (25 more steps of 7 ms), decodes 25 + 1 left frames.
    assert_eq!(out[1].at, ns(32.0) + 25 * ns(7.0) + ns(20.0 + 0.3 * 26.0));
    let starts: Vec<u32> = out.iter().map(|e| e.start_frame).collect();
    assert_eq!(starts, vec![0, 1, 26, 51]);
}

#[test]
fn deterministic_for_the_same_arrivals() {
    let jobs: Vec<(VTime, Job)> = (0..12)
        .map(|i| (ns(37.0 * i as f64), job(i + 1, 40 + 7 * i as u32)))
        .collect();
    assert_eq!(run(cfg(1), &jobs), run(cfg(1), &jobs));
}

fn first_packet(out: &[Emission], id: u64) -> VTime {
    out.iter().find(|e| e.id == id).unwrap().at
}

#[test]
fn codec_batch_one_starves_young_requests() {
    // Seven long streams saturate a batch-1 decoder (7 × 49 ms of decode per 325 ms of
    // talker time); an eighth request arrives while they stream.
    let mut jobs: Vec<(VTime, Job)> = (0..7).map(|i| (0, job(i + 1, 300))).collect();
    jobs.push((ns(2000.0), job(8, 60)));
    let serial = run(cfg(1), &jobs);
    let batched = run(cfg(8), &jobs);
    // Oldest first: the first request streams at talker pace in both.
    assert!(first_packet(&serial, 1) <= first_packet(&batched, 1) + ns(1.0));
    // The newcomer waits behind the older requests' backlog with batch 1.
    let young_serial = first_packet(&serial, 8) - ns(2000.0);
    let young_batched = first_packet(&batched, 8) - ns(2000.0);
    assert!(
        young_serial > 2 * young_batched,
        "{young_serial} vs {young_batched}"
    );
}

#[test]
fn chunk_fifo_serves_a_newcomer_in_queue_order() {
    // The same saturated decoder as above: in queue order the newcomer's first chunk
    // waits only for the chunks queued before it, not for the older requests' backlog.
    let mut jobs: Vec<(VTime, Job)> = (0..7).map(|i| (0, job(i + 1, 300))).collect();
    jobs.push((ns(2000.0), job(8, 60)));
    let oldest_first = run(slots_cfg(8, 1), &jobs);
    let mut fifo_cfg = slots_cfg(8, 1);
    fifo_cfg.codec.as_mut().unwrap().chunk_fifo = true;
    let fifo = run(fifo_cfg, &jobs);
    let young = |out: &[Emission]| first_packet(out, 8) - ns(2000.0);
    assert!(
        young(&fifo) * 3 < young(&oldest_first) * 2,
        "{} vs {}",
        young(&fifo),
        young(&oldest_first)
    );
    // Within a request, chunks still decode in order.
    for out in [&oldest_first, &fifo] {
        for id in 1..=8 {
            let starts: Vec<u32> = out
                .iter()
                .filter(|e| e.id == id)
                .map(|e| e.start_frame)
                .collect();
            assert!(starts.windows(2).all(|w| w[0] < w[1]), "{id}: {starts:?}");
        }
    }
}

#[test]
fn talker_batch_limit_queues_requests() {
    let mut c = cfg(8);
    c.talker.max_num_seqs = 2;
    let jobs: Vec<(VTime, Job)> = (0..3).map(|i| (0, job(i + 1, 30))).collect();
    let out = run(c, &jobs);
    let last_gen_of_1 = out
        .iter()
        .filter(|e| e.id <= 2)
        .map(|e| e.at)
        .max()
        .unwrap();
    // The third request only enters the talker when a slot frees: its first packet
    // comes after the first two generated everything (minus decode time).
    assert!(first_packet(&out, 3) > last_gen_of_1 - ns(40.0));
    let unlimited = run(cfg(8), &jobs);
    assert!(first_packet(&unlimited, 3) * 3 < first_packet(&out, 3));
}

#[test]
fn slowdown_scales_a_lone_request() {
    let base = run(cfg(1), &[(0, job(1, 50))]);
    let mut slow_cfg = cfg(1);
    slow_cfg.slowdown = 1.5;
    let slow = run(slow_cfg, &[(0, job(1, 50))]);
    for (a, b) in base.iter().zip(&slow) {
        let ratio = b.at as f64 / a.at as f64;
        assert!((ratio - 1.5).abs() < 1e-6, "{ratio}");
    }
}

#[test]
fn voice_clone_context_makes_decoding_slower() {
    let mut clone = job(1, 69);
    clone.ref_context_frames = 72;
    let plain = run(cfg(1), &[(0, job(1, 69))]);
    let cloned = run(cfg(1), &[(0, clone)]);
    assert_eq!(cloned[0].at - plain[0].at, ns(0.3 * 72.0));
}

#[test]
fn cancel_frees_capacity() {
    let mut e = Engine::new(cfg(1));
    let mut out = Vec::new();
    e.submit(0, job(1, 200), &mut out);
    e.submit(0, job(2, 50), &mut out);
    e.advance(ns(100.0), &mut out);
    e.cancel(1);
    e.advance(VTime::MAX, &mut out);
    assert!(out.iter().filter(|x| x.id == 1).all(|x| x.at <= ns(100.0)));
    assert!(out.iter().any(|x| x.id == 2 && x.last));
    let alone = run(cfg(1), &[(0, job(1, 200)), (0, job(2, 50))]);
    let done = |o: &[Emission]| o.iter().find(|x| x.id == 2 && x.last).unwrap().at;
    assert!(done(&out) < done(&alone));
}

#[test]
fn single_stage_emits_from_the_talker() {
    let c = EngineConfig {
        talker: TalkerParams {
            step_base_s: 10.0 * MS,
            step_per_seq_s: 0.0,
            prefill_per_seq_s: 0.0,
            max_num_seqs: 8,
            inline_decode_s: 5.0 * MS,
        },
        codec: None,
        chunking: Chunking {
            initial_frames: 3,
            chunk_frames: 3,
            ramp: vec![],
            async_chunk: true,
        },
        slowdown: 1.0,
        contention: 0.0,
    };
    let out = run(c, &[(0, job(1, 7))]);
    let sizes: Vec<u32> = out.iter().map(|e| e.frames).collect();
    assert_eq!(sizes, vec![3, 3, 1]);
    // Steps 1..7; steps closing a chunk (3, 6, 7) cost 5 ms more; step 1 has the prefill.
    assert_eq!(out[0].at, ns(25.0) + ns(30.0) + ns(5.0));
    assert_eq!(out[2].at, ns(25.0) + ns(70.0) + ns(15.0));
}

#[test]
fn arrival_after_idle_starts_at_arrival() {
    let out = run(cfg(1), &[(ns(1000.0), job(1, 2))]);
    assert_eq!(out[0].at, ns(1000.0) + ns(32.0) + ns(20.3));
}

#[test]
fn batched_prefill_pays_the_largest_once() {
    let mut c = cfg(8);
    c.talker.prefill_per_seq_s = 2.0 * MS;
    let mut big = job(3, 2);
    big.prefill_s = 100.0 * MS;
    // Job 1 starts a step alone (6 + 1 + 25 + 2 ms); jobs 2 and 3 wait and are admitted
    // together: 6 + 3 × 1 (batch) + 100 (largest prefill) + 2 × 2 (per sequence).
    let out = run(c, &[(0, job(1, 2)), (1, job(2, 2)), (1, big)]);
    let first2 = out.iter().find(|e| e.id == 2).unwrap().at;
    // Then one decode step of three 1-frame chunks: 20 + 2 × 1 + 0.3 × (3 + 1 left).
    assert_eq!(first2, ns(34.0) + ns(113.0) + ns(23.2));
}

#[test]
fn contention_slows_talker_steps_while_decoding() {
    let mut c = cfg(1);
    c.contention = 1.0;
    let shared = run(c, &[(0, job(1, 69))]);
    let alone = run(cfg(1), &[(0, job(1, 69))]);
    // The first step runs before any decode: same first packet.
    assert_eq!(shared[0].at, alone[0].at);
    assert!(shared.last().unwrap().at > alone.last().unwrap().at);
}

#[test]
fn resident_slots_serve_requests_in_age_order() {
    // One slot: request 2 gets no audio before request 1 has finished.
    let jobs = [(0, job(1, 60)), (1, job(2, 60))];
    let one = run(slots_cfg(1, 1), &jobs);
    let last1 = one.iter().find(|e| e.id == 1 && e.last).unwrap().at;
    assert!(first_packet(&one, 2) > last1);
    // Two slots, batch 1: both stream, interleaved.
    let two = run(slots_cfg(2, 1), &jobs);
    let last1 = two.iter().find(|e| e.id == 1 && e.last).unwrap().at;
    assert!(first_packet(&two, 2) < last1);
}

#[test]
fn batching_efficiency_makes_big_batches_cheaper() {
    let jobs: Vec<(VTime, Job)> = (0..8).map(|i| (0, job(i + 1, 100))).collect();
    let mut linear = cfg(8);
    linear.codec.as_mut().unwrap().batch_efficiency = 1.0;
    let mut efficient = cfg(8);
    efficient.codec.as_mut().unwrap().batch_efficiency = 0.3;
    let end = |o: &[Emission]| o.iter().map(|e| e.at).max().unwrap();
    assert!(end(&run(efficient, &jobs)) < end(&run(linear, &jobs)));
}
