//! Where finished requests go: `records.jsonl` (one line per request, written as each
//! request finishes, at most `COALESCE` late under load) and the records kept for the
//! statistics.
//!
//! The client's event loop hands each record over without waking another thread when it
//! can: it serialises the line itself and writes it at once if the file was last written
//! at least `COALESCE` ago (one `write` per request at low load). Under load the lines
//! gather in a buffer and the loop writes them in one go `COALESCE` later, on a timeout of
//! its own. The wake-up per request this saves was a third of the client's context
//! switches at one stream (docs/benchmarks-history.md). Records that carry audio for the quality
//! capture go to the writer thread, which stores the audio off the loop's thread.
//!
//! A write on the loop's thread holds every stream's read timestamps while it lasts,
//! so the first one that takes longer than `SLOW_WRITE` (a network or saturated disk) moves
//! all later writes to the writer thread, and `bench.log` says so.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::progress::Progress;
use super::quality::{QualityStats, QualityWriter};
use super::record::RequestRecord;

/// The most a record waits in the buffer under load before it is written.
const COALESCE: Duration = Duration::from_millis(10);

/// A records write by a request task that takes longer than this moves every later write
/// to the writer thread (ext4 on the benchmark VM: about 17 µs a write).
const SLOW_WRITE: Duration = Duration::from_millis(2);

/// What the writer thread leaves: every record (chunk timelines dropped), the first write
/// problem, and the quality capture's counts when there was one.
type Written = (Vec<RequestRecord>, Option<String>, Option<QualityStats>);

/// Collects the records of one step and writes `records.jsonl`.
pub(crate) struct RecordSink {
    shared: Arc<Shared>,
    handle: std::thread::JoinHandle<Option<QualityStats>>,
}

/// A handle for request tasks: [`RecordTx::send`] one record per finished request.
#[derive(Clone)]
pub(crate) struct RecordTx {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// The writer thread waits here for a flush request, a quality record or the end.
    wake: Condvar,
    /// Held while bytes go to the file, so buffers taken in order are written in order.
    file: Mutex<Option<File>>,
    path: PathBuf,
    /// Whether records with audio go through the writer thread.
    capture: bool,
    /// A write by a request task was slow: from then on the writer thread writes.
    slow: AtomicBool,
}

struct State {
    /// Serialised lines not yet written.
    buf: Vec<u8>,
    /// An empty buffer to take `buf`'s place when it is written.
    spare: Vec<u8>,
    /// When `buf` was last taken for writing (`None`: not yet).
    last_write: Option<Instant>,
    /// A write of `buf` after `COALESCE` is scheduled (the loop's timeout or the writer thread).
    flush_asked: bool,
    /// Records with audio, for the writer thread.
    capture: Vec<RequestRecord>,
    all: Vec<RequestRecord>,
    progress: Progress,
    problem: Option<String>,
    /// Why the writes moved to the writer thread, when they did.
    moved: Option<String>,
    closed: bool,
}

impl RecordSink {
    /// Starts the writer. A file that cannot be written is reported at
    /// [`RecordSink::finish`]; the records are still collected.
    pub(crate) fn start(path: &Path, progress: Progress) -> RecordSink {
        RecordSink::start_with(path, progress, None)
    }

    /// [`RecordSink::start`], also keeping the audio of successful measured requests
    /// that carry it through `quality`.
    pub(crate) fn start_with(
        path: &Path,
        progress: Progress,
        quality: Option<QualityWriter>,
    ) -> RecordSink {
        let (file, problem) = match File::create(path) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(format!("cannot write {}: {e}", path.display()))),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(64 * 1024),
                spare: Vec::with_capacity(64 * 1024),
                last_write: None,
                flush_asked: false,
                capture: Vec::new(),
                all: Vec::new(),
                progress,
                problem,
                moved: None,
                closed: false,
            }),
            wake: Condvar::new(),
            file: Mutex::new(file),
            path: path.to_path_buf(),
            capture: quality.is_some(),
            slow: AtomicBool::new(false),
        });
        let writer = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("dfx-records".into())
            .spawn(move || writer.run(quality));
        let handle = spawned.unwrap_or_else(|e| panic!("cannot start the records writer: {e}"));
        RecordSink { shared, handle }
    }

    /// A handle for request tasks.
    pub(crate) fn sender(&self) -> RecordTx {
        RecordTx {
            shared: self.shared.clone(),
        }
    }

    /// Writes every record sent so far and returns them with any write problem. Call it
    /// after the last request finished; a record sent later is dropped.
    pub(crate) fn finish(self) -> (Vec<RequestRecord>, Option<String>) {
        let (records, problem, _) = self.finish_with_quality();
        (records, problem)
    }

    /// [`RecordSink::finish`] with the quality capture's counts, when there was one.
    pub(crate) fn finish_with_quality(self) -> Written {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        let quality = self.handle.join();
        let mut st = self.shared.lock();
        st.progress.finish();
        let problem = match &quality {
            Ok(_) => st.problem.take(),
            Err(_) => Some("records writer panicked".into()),
        };
        let problem = match (problem, st.moved.take()) {
            (Some(p), Some(m)) => Some(format!("{p}; {m}")),
            (p, m) => p.or(m),
        };
        (std::mem::take(&mut st.all), problem, quality.ok().flatten())
    }
}

impl RecordTx {
    /// Takes one finished request's record: written now when the file was last written
    /// at least `COALESCE` ago; else its line waits, and the result says when the caller
    /// (the event loop, which keeps its own timers) is to call [`RecordTx::flush_due`].
    ///
    /// A request that ended while `others_in_flight` gets no such time: the next request
    /// to end writes its line (its send finds the buffer due). A timer costs the loop a
    /// wake-up of its own when nothing else wakes it (about one per request at 50 req/s,
    /// docs/benchmarks-history.md); the last request in flight still gets one, so no line
    /// waits past `COALESCE` once the requests stop ending.
    pub(crate) fn send(&self, rec: RequestRecord, others_in_flight: bool) -> Option<Instant> {
        self.take(rec, others_in_flight)
            .then(|| Instant::now() + COALESCE)
    }

    /// The write asked for by [`RecordTx::send`] is due: writes the waiting lines, or
    /// asks the writer thread to when it holds the file (it is storing audio).
    pub(crate) fn flush_due(&self) {
        self.shared.flush_due();
    }

    /// Takes the record; `true` when its line waits and a write after `COALESCE` is to be
    /// scheduled by the caller.
    fn take(&self, rec: RequestRecord, others_in_flight: bool) -> bool {
        let sh = &*self.shared;
        let mut st = sh.lock();
        if st.closed {
            return false;
        }
        if sh.capture && rec.audio.is_some() {
            st.capture.push(rec);
            drop(st);
            sh.wake.notify_one();
            return false;
        }
        st.take_record(rec, &sh.path);
        let due = st.last_write.is_none_or(|t| t.elapsed() >= COALESCE);
        let slow = sh.slow.load(Ordering::Relaxed);
        // The loop's thread never waits for the file: when the writer holds it, the writer
        // takes these lines too.
        match sh.try_file() {
            Some(file) if due && !slow => sh.write_timed(st, file),
            Some(_) if others_in_flight && !slow => {}
            _ if !st.flush_asked => {
                st.flush_asked = true;
                drop(st);
                if slow {
                    sh.wake.notify_one();
                } else {
                    return true;
                }
            }
            _ => {}
        }
        false
    }
}

impl State {
    /// Serialises `rec` into the buffer, counts it and keeps it without its timeline.
    fn take_record(&mut self, mut rec: RequestRecord, path: &Path) {
        if let Err(e) = rec.write_json(&mut self.buf) {
            self.problem
                .get_or_insert_with(|| format!("cannot write {}: {e}", path.display()));
        }
        self.buf.push(b'\n');
        if !rec.id.warmup {
            self.progress.request_done(rec.end.ok);
        }
        // The chunk timeline is in records.jsonl now; the statistics need none of it, so a
        // step's memory does not grow with its chunks.
        rec.chunk_t_s = Vec::new();
        rec.chunk_bytes = Vec::new();
        rec.audio = None;
        rec.quality = None;
        self.all.push(rec);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; the records are still good.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds the file for writing if no one else does (never waits: the loop's thread).
    fn try_file(&self) -> Option<MutexGuard<'_, Option<File>>> {
        match self.file.try_lock() {
            Ok(f) => Some(f),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Holds the file for writing (waits for it: the writer thread only).
    fn file(&self) -> MutexGuard<'_, Option<File>> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the buffer and writes it outside the state lock; `file` is held from before
    /// the buffer is taken to after it is written, so lines stay in order.
    /// The written buffer becomes the next spare: no allocation per write (a new 64 KiB
    /// buffer per write was most of the event loop's page faults per request).
    fn write_out(&self, mut st: MutexGuard<'_, State>, mut file: MutexGuard<'_, Option<File>>) {
        let spare = std::mem::take(&mut st.spare);
        let mut buf = std::mem::replace(&mut st.buf, spare);
        st.last_write = Some(Instant::now());
        st.flush_asked = false;
        drop(st);
        let mut problem = None;
        if !buf.is_empty()
            && let Some(f) = file.as_mut()
            && let Err(e) = f.write_all(&buf)
        {
            *file = None;
            problem = Some(format!("cannot write {}: {e}", self.path.display()));
        }
        drop(file);
        buf.clear();
        let mut st = self.lock();
        if let Some(msg) = problem {
            st.problem.get_or_insert(msg);
        }
        st.spare = buf;
    }

    /// The loop's timer for [`RecordTx::send`] ran out: writes the buffered lines, or asks
    /// the writer thread to when it holds the file (it is storing audio).
    fn flush_due(&self) {
        let st = self.lock();
        if st.closed || !st.flush_asked {
            // The end (the writer thread writes the rest) or written already.
            return;
        }
        match self.try_file() {
            Some(file) if !self.slow.load(Ordering::Relaxed) => self.write_timed(st, file),
            _ => {
                drop(st);
                self.wake.notify_one();
            }
        }
    }

    /// [`Shared::write_out`] on a request task's thread, timed: the first write slower
    /// than `SLOW_WRITE` hands every later one to the writer thread.
    fn write_timed(&self, st: MutexGuard<'_, State>, file: MutexGuard<'_, Option<File>>) {
        let started = Instant::now();
        self.write_out(st, file);
        let took = started.elapsed();
        if took > SLOW_WRITE && !self.slow.swap(true, Ordering::Relaxed) {
            self.lock().moved = Some(format!(
                "a write of {} took {:.1} ms on the client's event-loop thread, which timestamps \
                 every stream's reads; the writer thread wrote the records after it",
                self.path.display(),
                took.as_secs_f64() * 1e3
            ));
        }
    }

    /// The writer thread: buffered lines after `COALESCE`, quality records, and the rest
    /// at the end.
    fn run(&self, mut quality: Option<QualityWriter>) -> Option<QualityStats> {
        lower_thread_priority();
        let mut st = self.lock();
        loop {
            if !st.capture.is_empty() {
                let batch = std::mem::take(&mut st.capture);
                drop(st);
                let recs = self.store_audio(batch, quality.as_mut());
                st = self.lock();
                for rec in recs {
                    st.take_record(rec, &self.path);
                }
                let file = self.file();
                self.write_out(st, file);
                st = self.lock();
                continue;
            }
            if st.closed {
                let file = self.file();
                self.write_out(st, file);
                return quality.map(QualityWriter::finish);
            }
            if st.flush_asked {
                drop(st);
                std::thread::sleep(COALESCE);
                let file = self.file();
                self.write_out(self.lock(), file);
                st = self.lock();
                continue;
            }
            st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Keeps the audio of successful measured records (outside the state lock).
    fn store_audio(
        &self,
        mut batch: Vec<RequestRecord>,
        mut quality: Option<&mut QualityWriter>,
    ) -> Vec<RequestRecord> {
        for rec in &mut batch {
            if let (Some(q), Some(audio), Some(row)) =
                (quality.as_deref_mut(), rec.audio.take(), rec.quality.take())
                && rec.end.ok
                && !rec.id.warmup
            {
                let kept = super::quality::Kept {
                    index: rec.id.index,
                    request_id: rec.id.request_id.as_deref(),
                    sample_id: &rec.sample_id,
                    sample_rate: rec.sample_rate,
                };
                q.keep(&kept, &row, &audio);
            }
        }
        batch
    }
}

/// Lowers the calling thread's priority (nice +10; Linux nice values are per thread), so
/// that storing audio and writing records never takes a core from the event loop's thread,
/// which timestamps body reads. Best effort: an error leaves the priority as it was.
fn lower_thread_priority() {
    let tid = nix::unistd::gettid().as_raw();
    // SAFETY: setpriority only reads its integer arguments.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) };
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::native::client::Exchange;
    use crate::native::record::{Dispatch, Sample};

    pub(crate) fn record(index: usize) -> RequestRecord {
        let now = Instant::now();
        let d = Dispatch {
            index,
            warmup: false,
            planned: now,
            dispatched: now,
            slot: now,
            saturated: None,
        };
        let s = Sample {
            request_id: Some(format!("r-{index}")),
            sample_id: "s".into(),
            text_len: 1,
            quality: None,
        };
        RequestRecord::new(&d, s, &Exchange::saturated(1), now, 24_000)
    }

    fn lines(path: &Path) -> usize {
        std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
    }

    /// The `index` of every line of the file, in order.
    fn indices(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["index"].to_string())
            .collect()
    }

    /// Waits (at most 5 s) until the file has `n` lines.
    fn until_lines(path: &Path, n: usize) {
        for _ in 0..500 {
            if lines(path) == n {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A sink writing `records.jsonl` in a new temporary folder (kept alive by the first).
    fn sink_in_temp(requests: usize) -> (tempfile::TempDir, PathBuf, RecordSink) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let sink = RecordSink::start(&path, Progress::new("t", requests, false));
        (dir, path, sink)
    }

    /// Waits until `at` and calls `flush_due`, as the event loop does.
    fn flush_at(tx: &RecordTx, at: Option<Instant>) {
        let at = at.expect("a flush time for a waiting line");
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        tx.flush_due();
    }

    /// Records sent close together wait and reach the file at the flush time the send
    /// returned, before the step ends, in order; the rest at `finish`.
    #[test]
    fn waiting_lines_are_written_at_the_flush_time_before_the_end() {
        let (_dir, path, sink) = sink_in_temp(3);
        let tx = sink.sender();
        // The first is written at once; the next two within `COALESCE` of it wait.
        assert_eq!(tx.send(record(0), false), None);
        assert_eq!(lines(&path), 1);
        let at = tx.send(record(1), false);
        assert!(at.is_some());
        // Asked already: the second waiting line gets no time of its own.
        assert_eq!(tx.send(record(2), false), None);
        assert_eq!(lines(&path), 1);
        flush_at(&tx, at);
        assert_eq!(
            lines(&path),
            3,
            "waiting lines not written at the flush time"
        );
        tx.send(record(3), false);
        let (all, problem) = sink.finish();
        assert_eq!(problem, None);
        assert_eq!(all.len(), 4);
        assert_eq!(indices(&path), ["0", "1", "2", "3"]);
    }

    /// A line sent while other requests are in flight waits for the next send (no
    /// flush time); the last request in flight gets one again.
    #[test]
    fn with_requests_in_flight_the_next_send_writes_the_waiting_line() {
        let (_dir, path, sink) = sink_in_temp(4);
        let tx = sink.sender();
        assert_eq!(tx.send(record(0), true), None);
        assert_eq!(tx.send(record(1), true), None);
        assert_eq!(
            lines(&path),
            1,
            "the first is written at once, the second waits"
        );
        std::thread::sleep(5 * COALESCE);
        assert_eq!(
            lines(&path),
            1,
            "nothing writes a line with requests in flight"
        );
        assert_eq!(tx.send(record(2), true), None);
        assert_eq!(
            lines(&path),
            3,
            "the next send wrote the waiting line and its own"
        );
        let at = tx.send(record(3), false);
        flush_at(&tx, at);
        assert_eq!(lines(&path), 4, "the last request's line at its flush time");
        let (all, problem) = sink.finish();
        assert_eq!((all.len(), problem), (4, None));
        assert_eq!(indices(&path), ["0", "1", "2", "3"]);
    }

    /// After `finish` the writer thread has written every line, flushed or not.
    #[test]
    fn finish_writes_the_lines_still_waiting() {
        let (_dir, path, sink) = sink_in_temp(2);
        let tx = sink.sender();
        tx.send(record(0), false);
        assert!(tx.send(record(1), false).is_some());
        let (all, _) = sink.finish();
        assert_eq!(all.len(), 2);
        until_lines(&path, 2);
        assert_eq!(lines(&path), 2);
    }
}

/// Tests of the move to the writer thread after a slow write.
#[cfg(test)]
mod slow_tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;

    use super::tests::record;
    use super::*;

    /// A records "file" that is a FIFO with a one-page buffer, read a page every 250 ms:
    /// a write blocks once the page is full, as on a slow disk.
    fn slow_reader(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let mut f = File::open(&path).unwrap();
            // SAFETY: F_SETPIPE_SZ only reads its integer argument.
            unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
            let (mut all, mut buf) = (Vec::new(), [0u8; 4096]);
            loop {
                std::thread::sleep(Duration::from_millis(250));
                match f.read(&mut buf) {
                    Ok(0) | Err(_) => return all,
                    Ok(n) => all.extend_from_slice(&buf[..n]),
                }
            }
        })
    }

    #[test]
    fn after_a_slow_write_the_writer_thread_writes_and_the_log_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let reader = slow_reader(&path);
        let sink = RecordSink::start(&path, Progress::new("t", 40, false));
        let tx = sink.sender();
        let shared = sink.shared.clone();
        for i in 0..40 {
            // Each record is due at once: the sender writes it itself until a write is slow.
            tx.send(record(i), false);
            std::thread::sleep(COALESCE + Duration::from_millis(1));
        }
        drop(tx);
        let slow = shared.slow.load(Ordering::Relaxed);
        // The file closes (the reader's end of input) with the last handle on it.
        drop(shared);
        let (all, problem) = sink.finish();
        let text = String::from_utf8(reader.join().unwrap()).unwrap();
        assert!(slow, "no write was slow");
        assert_eq!(all.len(), 40);
        let problem = problem.unwrap_or_default();
        assert!(
            problem.contains("on the client's event-loop thread") && problem.contains(" ms "),
            "{problem}"
        );
        let ids: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["index"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids, (0..40).collect::<Vec<u64>>(), "every record, in order");
    }
}
