//! Where finished requests go: `records.jsonl` (one line per request, written as each
//! request finishes, at most `COALESCE` late under load) and the records kept for the
//! statistics.
//!
//! A request task hands its record over without waking another thread when it can: it
//! serialises the line itself and writes it at once if the file was last written at least
//! `COALESCE` ago (one `write` per request at low load). Under load the lines gather in a
//! buffer and the writer thread, woken at most once per `COALESCE`, writes them in one go.
//! The wake-up per request this saves was a third of the client's context switches at one
//! stream (BENCHMARKS.md). Records that carry audio for the quality capture go to the writer
//! thread, which stores the audio off the runtime threads.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::progress::Progress;
use super::quality::{QualityStats, QualityWriter};
use super::record::RequestRecord;

/// The most a record waits in the buffer under load before it is written.
const COALESCE: Duration = Duration::from_millis(10);

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
}

struct State {
    /// Serialised lines not yet written.
    buf: Vec<u8>,
    /// When `buf` was last taken for writing (`None`: not yet).
    last_write: Option<Instant>,
    /// The writer thread has been asked to write `buf` after `COALESCE`.
    flush_asked: bool,
    /// Records with audio, for the writer thread.
    capture: Vec<RequestRecord>,
    all: Vec<RequestRecord>,
    progress: Progress,
    problem: Option<String>,
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
                last_write: None,
                flush_asked: false,
                capture: Vec::new(),
                all: Vec::new(),
                progress,
                problem,
                closed: false,
            }),
            wake: Condvar::new(),
            file: Mutex::new(file),
            path: path.to_path_buf(),
            capture: quality.is_some(),
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
        (std::mem::take(&mut st.all), problem, quality.ok().flatten())
    }
}

impl RecordTx {
    /// Takes one finished request's record: written now, or within `COALESCE` when the
    /// file was written less than that ago.
    pub(crate) fn send(&self, rec: RequestRecord) {
        let sh = &*self.shared;
        let mut st = sh.lock();
        if st.closed {
            return;
        }
        if sh.capture && rec.audio.is_some() {
            st.capture.push(rec);
            drop(st);
            sh.wake.notify_one();
            return;
        }
        st.take_record(rec, &sh.path);
        let due = st.last_write.is_none_or(|t| t.elapsed() >= COALESCE);
        // A runtime thread never waits for the file: when the writer holds it, the writer
        // takes these lines too.
        let file = match sh.file.try_lock() {
            Ok(f) => Some(f),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        match file {
            Some(file) if due => sh.write_out(st, file),
            _ if !st.flush_asked => {
                st.flush_asked = true;
                drop(st);
                sh.wake.notify_one();
            }
            _ => {}
        }
    }
}

impl State {
    /// Serialises `rec` into the buffer, counts it and keeps it without its timeline.
    fn take_record(&mut self, mut rec: RequestRecord, path: &Path) {
        if let Err(e) = serde_json::to_writer(&mut self.buf, &rec) {
            self.problem
                .get_or_insert_with(|| format!("cannot write {}: {e}", path.display()));
        }
        self.buf.push(b'\n');
        if !rec.warmup {
            self.progress.request_done(rec.ok);
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

    /// Holds the file for writing (waits for it: the writer thread only).
    fn file(&self) -> MutexGuard<'_, Option<File>> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the buffer and writes it outside the state lock; `file` is held from before
    /// the buffer is taken to after it is written, so lines stay in order.
    fn write_out(&self, mut st: MutexGuard<'_, State>, mut file: MutexGuard<'_, Option<File>>) {
        let buf = std::mem::replace(&mut st.buf, Vec::with_capacity(64 * 1024));
        st.last_write = Some(Instant::now());
        st.flush_asked = false;
        drop(st);
        if buf.is_empty() {
            return;
        }
        if let Some(f) = file.as_mut()
            && let Err(e) = f.write_all(&buf)
        {
            *file = None;
            drop(file);
            let msg = format!("cannot write {}: {e}", self.path.display());
            self.lock().problem.get_or_insert(msg);
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
                && rec.ok
                && !rec.warmup
            {
                q.keep(rec, &row, &audio);
            }
        }
        batch
    }
}

/// Lowers the calling thread's priority (nice +10; Linux nice values are per thread), so
/// that storing audio and writing records never takes a core from the runtime threads
/// that timestamp body reads. Best effort: an error leaves the priority as it was.
fn lower_thread_priority() {
    let tid = nix::unistd::gettid().as_raw();
    // SAFETY: setpriority only reads its integer arguments.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) };
}
