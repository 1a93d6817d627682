//! The chaos test: several real `weft serve` processes share one store
//! (two on one SQLite file, three on one PostgreSQL database) and drive runs
//! of the journal agent (`examples/journal.toml`), created through any of
//! them; one at a time is killed with SIGKILL at random moments and
//! restarted. The others take the dead one's runs over once their leases
//! lapse. At the end the store and the journal directory (the external
//! ledger) must show that every run finished exactly once, that every event
//! log is gap-free and ordered, that the non-idempotent `journal.append` ran
//! at most once per call (exactly once when its result is a success), and
//! that every `journal.put` left the entry its result claims. Every run is
//! also followed over SSE from the start, through whichever server is up
//! (reconnecting with `Last-Event-ID`): what the client saw must be exactly
//! the stored log.
//!
//! Right after each kill the test reads the last committed snapshot of every
//! running run the killed server held the lease of: a call of the batch
//! being executed there without a stored result was in flight at the crash.
//! Such a `journal.append` call must end with the "interrupted by restart"
//! error (never a success: that would be a second execution), and an
//! "interrupted" result is only allowed for a call that was in flight at
//! some crash. Most kills must land while the killed server held runs.
//!
//! The servers alternate between the two durability modes (`--durability
//! sync` and `process`), so kills land on servers in each: a commit a
//! killed server acknowledged must be there in both.
//!
//! Last, every stored run is replayed with the agent the servers ran
//! (`weft replay --all --json`, the real binary): each must replay
//! identically, the runs whose calls a kill interrupted included (their
//! logs hold the interrupted results).
//!
//! The PostgreSQL server is `WEFT_TEST_POSTGRES_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/test`, in a fresh schema dropped at
//! the end. The kill delays come from a seed printed at the start; set
//! `WEFT_CRASH_SEED` to replay the same delays, and `WEFT_CRASH_KEEP=1` to
//! keep the SQLite test's directory (database, journal, server logs).

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use weft_core::ToolCallId;
use weft_core::event::{EventKind, RunEvent};
use weft_core::run::{PhaseName, RunMachine};
use weft_core::store::{RunFilter, RunRecord, RunStatus};
use weft_core::tool::{ToolError, ToolResultBody};

/// Runs to start, spread at random over up to `spacing_ms` each (so that
/// runs are in flight through every kill). The creator goes on starting
/// runs until the kills are done, up to [`MAX_RUNS`].
const RUNS: usize = 100;
/// Most runs the creator starts while kills remain to be landed.
const MAX_RUNS: usize = 4 * RUNS;
/// How long the kills may wait for a server to hold an unfinished run
/// before the test fails (well within the test runner's time limit).
const NO_HOLDER_TIMEOUT: Duration = Duration::from_secs(60);
/// The lease TTL the servers run with, in milliseconds.
const LEASE_TTL_MS: u64 = 1_000;
/// SIGKILLs of a server holding unfinished runs, each followed by a restart.
const KILLS: usize = 20;
/// The tenant's bearer token.
const TOKEN: &str = "crash-token";
/// How long a server may take to answer `/healthz` after being started.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the runs may take to finish after the last restart.
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);
/// The PostgreSQL server used unless `WEFT_TEST_POSTGRES_URL` says otherwise.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db").to_str().unwrap().to_owned();
    if std::env::var_os("WEFT_CRASH_KEEP").is_some() {
        eprintln!("keeping {}", dir.path().display());
        let path = dir.keep();
        crash_test("sqlite", &db, None, &path, 2, 300).await;
        return;
    }
    crash_test("sqlite", &db, None, dir.path(), 2, 300).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_on_postgres() {
    // Dropped last (locals drop in reverse order), after the server is gone.
    let (db, _schema) = common::postgres_schema("crash").await;
    let base = _schema.base.clone();
    let dir = tempfile::tempdir().unwrap();
    crash_test("postgres", &db, Some(&base), dir.path(), 3, 600).await;
}

/// The whole scenario against the store at `db`, with scratch files in `dir`;
/// `postgres` is the server's URL when `db` is a PostgreSQL schema.
async fn crash_test(
    backend: &str,
    db: &str,
    postgres: Option<&str>,
    dir: &Path,
    servers: usize,
    spacing_ms: u64,
) {
    let runs = RUNS;
    let started = Instant::now();
    let seed = std::env::var("WEFT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(seed_from_clock);
    eprintln!(
        "crash test on {backend}: seed {seed} (replay the delays with WEFT_CRASH_SEED={seed})"
    );
    let mut rng = Rng::new(seed);
    let journal = dir.join("journal");
    std::fs::create_dir_all(&journal).unwrap();
    let mut harness = Harness {
        db: db.to_owned(),
        dir: dir.to_owned(),
        journal: journal.clone(),
        incarnations: 0,
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let current: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let mut slots = Vec::new();
    for _ in 0..servers {
        let server = harness.start(&client).await;
        current.lock().unwrap().push(server.base.clone());
        slots.push(server);
    }
    let seen: Seen = Arc::new(Mutex::new(HashMap::new()));
    let kills_done = Arc::new(AtomicBool::new(false));
    let creator = tokio::spawn(create_runs(
        client.clone(),
        current.clone(),
        Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15),
        runs,
        spacing_ms,
        seen.clone(),
        kills_done.clone(),
    ));

    let mut delays = Vec::new();
    let mut at_crashes: Vec<(String, RunMachine)> = Vec::new();
    let mut lingering = 0;
    let mut mid_run = 0;
    // Kill until KILLS kills have landed on a server holding unfinished
    // runs; a moment when no server holds any is skipped.
    let mut skipped = 0;
    let mut last_holder = Instant::now();
    while mid_run < KILLS {
        let delay = 10 + rng.below(200);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let mut holding = Vec::new();
        for (i, server) in slots.iter().enumerate() {
            if !held_snapshots(db, server.child.id()).await.is_empty() {
                holding.push(i);
            }
        }
        if holding.is_empty() {
            skipped += 1;
            assert!(
                last_holder.elapsed() < NO_HOLDER_TIMEOUT,
                "no server held an unfinished run for {} s ({skipped} looks, {mid_run} kills so far)",
                NO_HOLDER_TIMEOUT.as_secs()
            );
            continue;
        }
        last_holder = Instant::now();
        delays.push(delay);
        let slot = holding[rng.below(holding.len() as u64) as usize];
        let server = &mut slots[slot];
        current.lock().unwrap().retain(|b| *b != server.base);
        let pid = server.child.id();
        let ports = match postgres {
            Some(_) => tcp_ports(pid),
            None => Vec::new(),
        };
        server.kill();
        if let Some(base) = postgres {
            // A COMMIT the killed server had sent may still land: read the
            // snapshots only once its backends are gone.
            lingering += wait_for_backends(base, &ports).await;
        }
        let held = held_snapshots(db, pid).await;
        if !held.is_empty() {
            mid_run += 1;
        }
        at_crashes.extend(held);
        *server = harness.start(&client).await;
        current.lock().unwrap().push(server.base.clone());
    }
    kills_done.store(true, Ordering::Relaxed);
    let server = &slots[0];
    eprintln!(
        "{backend}: {} kills of {servers} servers after {delays:?} ms of serving; \
         {mid_run} landed while the killed server held unfinished runs",
        delays.len()
    );

    if postgres.is_some() {
        eprintln!(
            "{backend}: {lingering} database backend(s) of killed servers were still at work \
             right after a kill (waited for)"
        );
    }

    // Every run must be acknowledged before waiting for them to finish.
    let created = tokio::time::timeout(Duration::from_secs(60), creator)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the {runs} runs were not all created within 60 s of the last restart\n{}",
                server.log_tail()
            )
        })
        .unwrap();
    assert!(created.acknowledged.len() >= runs);

    // Wait for every run (acknowledged or not) to finish.
    let deadline = Instant::now() + FINISH_TIMEOUT;
    let listed = loop {
        let runs = match list_runs(&client, &server.base).await {
            Ok(runs) => runs,
            Err(e) => panic!("GET /v1/runs failed: {e}\n{}", server.log_tail()),
        };
        let unfinished: Vec<&(String, String)> = runs
            .iter()
            .filter(|(_, status)| !matches!(status.as_str(), "completed" | "failed" | "cancelled"))
            .collect();
        let ids: HashSet<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
        let missing = created
            .acknowledged
            .iter()
            .filter(|id| !ids.contains(id.as_str()))
            .count();
        if unfinished.is_empty() && missing == 0 {
            break runs;
        }
        if Instant::now() > deadline {
            panic!(
                "{} of {} runs unfinished {} s after the last restart ({missing} acknowledged runs \
                 not listed): {unfinished:?}\n{}",
                unfinished.len(),
                runs.len(),
                FINISH_TIMEOUT.as_secs(),
                server.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Every SSE follower has seen its run finish by now, or soon.
    for (run, follower) in created.acknowledged.iter().zip(created.followers) {
        let ended = tokio::time::timeout(Duration::from_secs(30), follower).await;
        if let Ok(Err(e)) = &ended {
            panic!("the SSE follower of run {run} failed: {e}");
        }
        if ended.is_err() {
            let seen = seen.lock().unwrap().get(run).map(|s| s.len());
            panic!(
                "the SSE follower of run {run} did not see it finish ({seen:?} events seen)\n{}",
                server.log_tail()
            );
        }
    }
    drop(slots);
    let serving = started.elapsed();

    // Read everything back from the store with the server stopped.
    let store = weft_store::connect(db).await.unwrap();
    let records = store.list_runs(&RunFilter::default()).await.unwrap();
    let mut logs: BTreeMap<String, (RunRecord, Vec<RunEvent>)> = BTreeMap::new();
    for record in records {
        let events = store.read_events(&record.run_id, 0, None).await.unwrap();
        logs.insert(record.run_id.to_string(), (record, events));
    }
    drop(store);

    let mut report = check(&logs, &at_crashes, &created.acknowledged, &listed, &journal);
    compare_with_sse(&logs, &seen.lock().unwrap(), &mut report.violations);
    let replaying = Instant::now();
    let replayed = replay_every_run(db, logs.len(), &mut report.violations).await;
    eprintln!(
        "{backend}: {replayed} runs replayed in {:.1} s",
        replaying.elapsed().as_secs_f32()
    );
    let recovered: Vec<usize> = (1..=harness.incarnations)
        .map(|n| harness.recovered_count(n))
        .collect();
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    for (record, _) in logs.values() {
        *statuses.entry(record.status.as_str()).or_default() += 1;
    }
    eprintln!(
        "crash summary ({backend}, seed {seed}): {} runs ({} acknowledged, {} failed POSTs), \
         statuses {statuses:?}, {KILLS} kills, {} starts, runs recovered per start {recovered:?}, \
         {} append calls ({} interrupted, {} of them after their line was written), \
         {} put calls ({} in flight at a crash, i.e. re-executed), {} runs recovered from a \
         planning snapshot, {} s",
        logs.len(),
        created.acknowledged.len(),
        created.failed_posts,
        harness.incarnations,
        report.appends,
        report.interrupted,
        report.interrupted_with_effect,
        report.puts,
        report.reexecuted_puts,
        report.planning_at_crash,
        started.elapsed().as_secs_f32(),
    );
    eprintln!(
        "{backend}: serving and killing took {:.1} s",
        serving.as_secs_f32()
    );
    if !report.violations.is_empty() {
        let shown: Vec<&String> = report.violations.iter().take(40).collect();
        panic!(
            "{} violation(s) on {backend} (seed {seed}), first ones:\n{}",
            report.violations.len(),
            shown
                .iter()
                .map(|v| format!("  - {v}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Replays every run of the store `db` with the journal agent, as `weft
/// replay --all` does; a replay that is not identical, or a run it does
/// not report, is a violation. Returns how many runs were replayed.
async fn replay_every_run(db: &str, runs: usize, violations: &mut Vec<String>) -> usize {
    let db = db.to_owned();
    let agent = common::example("journal.toml");
    let replayed =
        tokio::task::spawn_blocking(move || common::replay::replay_all(&db, &[agent], &[]))
            .await
            .unwrap();
    for line in replayed.not_identical() {
        violations.push(format!(
            "an unchanged agent's replay is not identical: {line}"
        ));
    }
    if replayed.reports.len() != runs || replayed.code != Some(0) {
        violations.push(format!(
            "weft replay --all reported {} of {runs} runs (exit code {:?}), summary {}",
            replayed.reports.len(),
            replayed.code,
            replayed.summary
        ));
    }
    replayed.reports.len()
}

/// The local ports of a process's TCP sockets (from `/proc`): its PostgreSQL
/// backends are the ones whose `client_port` is among them.
fn tcp_ports(pid: u32) -> Vec<i32> {
    let mut inodes = HashSet::new();
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
            {
                inodes.insert(inode.to_owned());
            }
        }
    }
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9
                && inodes.contains(cols[9])
                && let Some(port) = cols[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| i32::from_str_radix(p, 16).ok())
            {
                ports.push(port);
            }
        }
    }
    ports
}

/// Waits (at most 10 s) until no PostgreSQL backend serves a connection
/// from one of `ports`: a killed client's backend finishes the statement it
/// was running (a COMMIT lands) before it notices the client is gone.
/// Returns how many there were at first.
async fn wait_for_backends(base: &str, ports: &[i32]) -> i64 {
    let mut conn = PgConnection::connect(base).await.unwrap();
    let mut first = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (left,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'weft' AND client_port = ANY($1)",
        )
        .bind(ports)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        let first = *first.get_or_insert(left);
        if left == 0 {
            let _ = conn.close().await;
            return first;
        }
        if Instant::now() > deadline {
            panic!("{left} PostgreSQL backend(s) of a killed server still alive after 10 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The last committed snapshot of every run the store says is running,
/// read while no server is up (right after a kill): what the next server
/// recovers, and which tool calls were in flight at the crash.
/// The snapshots of the running runs whose lease process `pid` held.
async fn held_snapshots(db: &str, pid: u32) -> Vec<(String, RunMachine)> {
    let owner = format!("{pid}/");
    let store = weft_store::connect(db).await.unwrap();
    let running = store
        .list_runs(&RunFilter {
            statuses: vec![RunStatus::Running],
            ..RunFilter::default()
        })
        .await
        .unwrap();
    let mut out = Vec::new();
    for record in running {
        if let Some(stored) = store.load_run(&record.run_id).await.unwrap()
            && stored.lease_owner.is_some_and(|o| o.starts_with(&owner))
        {
            out.push((record.run_id.to_string(), stored.snapshot));
        }
    }
    out
}

/// Whether tool call `call` of `run` was in flight at one of the crashes:
/// part of the batch being executed in the last committed snapshot, without
/// a `tool_finished` event among the events committed with that snapshot.
fn in_flight_at_a_crash(
    at_crashes: &[(String, RunMachine)],
    run: &str,
    call: &str,
    events: &[RunEvent],
) -> bool {
    let id = ToolCallId::new(call);
    at_crashes.iter().any(|(r, machine)| {
        r == run
            && machine.phase_name() == PhaseName::Executing
            && machine.pending_call(&id).is_some()
            && !events.iter().any(|e| {
                e.seq <= machine.event_seq()
                    && matches!(&e.kind, EventKind::ToolFinished { output } if output.tool_call_id == id)
            })
    })
}

/// The phases (and committed event counts) of a run's snapshots at the kills.
fn crash_phases(at_crashes: &[(String, RunMachine)], run: &str) -> String {
    let phases: Vec<String> = at_crashes
        .iter()
        .filter(|(r, _)| r == run)
        .map(|(_, m)| format!("{:?} after event {}", m.phase_name(), m.event_seq()))
        .collect();
    format!("[{}]", phases.join(", "))
}

/// A run's log in brief: `seq:type[call]` per event.
fn describe(events: &[RunEvent]) -> String {
    events
        .iter()
        .map(|e| {
            let kind = serde_json::to_value(&e.kind).unwrap_or_default();
            let call = kind["tool_call_id"]
                .as_str()
                .or(kind["output"]["tool_call_id"].as_str())
                .map(|c| format!("[{c}]"))
                .unwrap_or_default();
            format!("{}:{}{call}", e.seq, kind["type"].as_str().unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the final checks found.
#[derive(Default)]
struct Report {
    violations: Vec<String>,
    appends: usize,
    interrupted: usize,
    interrupted_with_effect: usize,
    puts: usize,
    reexecuted_puts: usize,
    planning_at_crash: usize,
}

/// One `tool_finished` event of a run.
struct Finished {
    tool: String,
    text: Option<String>,
    result: ToolResultBody,
}

/// Checks the stored logs against the journal directory.
fn check(
    logs: &BTreeMap<String, (RunRecord, Vec<RunEvent>)>,
    at_crashes: &[(String, RunMachine)],
    acknowledged: &[String],
    listed: &[(String, String)],
    journal: &Path,
) -> Report {
    let mut r = Report {
        planning_at_crash: at_crashes
            .iter()
            .filter(|(_, m)| m.phase_name() == PhaseName::Planning)
            .count(),
        ..Report::default()
    };
    let v = &mut r.violations;

    for id in acknowledged {
        if !logs.contains_key(id) {
            v.push(format!("acknowledged run {id} is not in the store"));
        }
    }
    if logs.len() < RUNS {
        v.push(format!(
            "only {} runs in the store, want at least {RUNS}",
            logs.len()
        ));
    }
    for (id, _) in listed {
        if !logs.contains_key(id) {
            v.push(format!(
                "run {id} was listed by the server but is not in the store"
            ));
        }
    }

    // The journal: `<run_id> <tool_call_id> <text>` per execution of `append`.
    let log = std::fs::read_to_string(journal.join("journal.log")).unwrap_or_default();
    let mut lines: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut texts: HashMap<(String, String), usize> = HashMap::new();
    for line in log.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(run), Some(call), Some(text)) = (parts.next(), parts.next(), parts.next()) else {
            v.push(format!("malformed journal line {line:?}"));
            continue;
        };
        lines
            .entry((run.to_owned(), call.to_owned()))
            .or_default()
            .push(text.to_owned());
        *texts.entry((run.to_owned(), text.to_owned())).or_default() += 1;
    }
    for ((run, call), found) in &lines {
        if found.len() > 1 {
            v.push(format!(
                "journal.append {call} of run {run} executed {} times: {found:?}",
                found.len()
            ));
        }
    }
    for ((run, text), n) in &texts {
        if *n > 1 {
            v.push(format!(
                "run {run} appended {text:?} {n} times (the script appends it once)"
            ));
        }
    }

    let mut append_calls: HashMap<(String, String), String> = HashMap::new();
    let mut put_calls: HashMap<(String, String), String> = HashMap::new();
    for (run_id, (record, events)) in logs {
        // Gap-free and ordered.
        for (i, e) in events.iter().enumerate() {
            if e.seq != i as u64 + 1 {
                v.push(format!(
                    "run {run_id}: event #{} has seq {} (want 1..=n without gaps)",
                    i + 1,
                    e.seq
                ));
                break;
            }
        }
        // Finished exactly once, last.
        let finishes: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.kind, EventKind::RunFinished { .. }))
            .map(|(i, _)| i)
            .collect();
        if finishes.len() != 1 {
            v.push(format!(
                "run {run_id}: {} run_finished events (status {}); its log: {}",
                finishes.len(),
                record.status.as_str(),
                describe(events)
            ));
        } else if finishes[0] + 1 != events.len() {
            v.push(format!(
                "run {run_id}: run_finished is event {} of {}",
                finishes[0] + 1,
                events.len()
            ));
        }
        if !record.status.is_finished() {
            v.push(format!(
                "run {run_id}: stored status {}",
                record.status.as_str()
            ));
        }

        // Tool calls: one result each.
        let mut finished: HashMap<String, Finished> = HashMap::new();
        for e in events {
            if let EventKind::ToolFinished { output } = &e.kind {
                let call = output.tool_call_id.to_string();
                let entry = Finished {
                    tool: output.name.as_str().to_owned(),
                    text: output
                        .payload
                        .get("text")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    result: output.result.clone(),
                };
                if finished.insert(call.clone(), entry).is_some() {
                    v.push(format!(
                        "run {run_id}: tool call {call} has two tool_finished events"
                    ));
                }
            }
        }
        let mut run_texts: HashMap<String, usize> = HashMap::new();
        for (call, f) in &finished {
            let key = (run_id.clone(), call.clone());
            let text = f.text.clone().unwrap_or_default();
            *run_texts.entry(text.clone()).or_default() += 1;
            match f.tool.as_str() {
                "journal.append" => {
                    r.appends += 1;
                    append_calls.insert(key.clone(), text.clone());
                    let n = lines.get(&key).map_or(0, Vec::len);
                    let in_flight = in_flight_at_a_crash(at_crashes, run_id, call, events);
                    match &f.result {
                        ToolResultBody::Error(ToolError { code, .. })
                            if code == ToolError::UNAVAILABLE =>
                        {
                            r.interrupted += 1;
                            r.interrupted_with_effect += n;
                            if !in_flight {
                                v.push(format!(
                                    "run {run_id}: journal.append {call} got an \"interrupted\" \
                                     result but was in flight at no crash (no stored snapshot \
                                     at a kill had it pending without a result); {n} journal \
                                     line(s); snapshots at kills: {}; its log: {}",
                                    crash_phases(at_crashes, run_id),
                                    describe(events)
                                ));
                            }
                        }
                        ToolResultBody::Error(e) => v.push(format!(
                            "run {run_id}: journal.append {call} failed: {} {}",
                            e.code, e.message
                        )),
                        _ => {
                            if n != 1 {
                                v.push(format!(
                                    "run {run_id}: journal.append {call} succeeded but wrote \
                                     {n} journal lines"
                                ));
                            }
                            if in_flight {
                                v.push(format!(
                                    "run {run_id}: journal.append {call} was in flight at a \
                                     crash, yet its result is a success: it ran again"
                                ));
                            }
                        }
                    }
                    if let Some(found) = lines.get(&key)
                        && found.iter().any(|t| *t != text)
                    {
                        v.push(format!(
                            "run {run_id}: journal.append {call} wrote {found:?}, its payload \
                             says {text:?}"
                        ));
                    }
                }
                "journal.put" => {
                    r.puts += 1;
                    if in_flight_at_a_crash(at_crashes, run_id, call, events) {
                        r.reexecuted_puts += 1;
                    }
                    put_calls.insert(key, text.clone());
                    match &f.result {
                        ToolResultBody::Error(e) => v.push(format!(
                            "run {run_id}: idempotent journal.put {call} was not (re-)executed: \
                             {} {}",
                            e.code, e.message
                        )),
                        _ => {
                            let path = journal.join(format!("{run_id}.{call}.entry"));
                            match std::fs::read_to_string(&path) {
                                Ok(content) if content == text => {}
                                Ok(content) => v.push(format!(
                                    "run {run_id}: journal.put {call} left {content:?}, want \
                                     {text:?}"
                                )),
                                Err(e) => v.push(format!(
                                    "run {run_id}: journal.put {call} succeeded but {} is \
                                     unreadable: {e}",
                                    path.display()
                                )),
                            }
                        }
                    }
                }
                other => v.push(format!("run {run_id}: unexpected tool {other} ({call})")),
            }
        }
        for (text, n) in run_texts {
            if n > 1 {
                v.push(format!(
                    "run {run_id}: {n} tool results for the call with text {text:?}"
                ));
            }
        }
    }

    // Every effect belongs to a call whose result the log holds.
    for ((run, call), found) in &lines {
        if !append_calls.contains_key(&(run.clone(), call.clone())) {
            v.push(format!(
                "journal line(s) {found:?} of run {run}, call {call}: the run's log has no \
                 journal.append result for that call"
            ));
        }
    }
    for entry in std::fs::read_dir(journal).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".entry") else {
            continue;
        };
        let key = stem
            .split_once('.')
            .map(|(run, call)| (run.to_owned(), call.to_owned()));
        let content = std::fs::read_to_string(journal.join(&name)).unwrap_or_default();
        match key.and_then(|k| put_calls.get(&k)) {
            Some(text) if *text == content => {}
            Some(text) => v.push(format!("entry {name} holds {content:?}, want {text:?}")),
            None => v.push(format!(
                "entry {name}: the run's log has no journal.put result for that call"
            )),
        }
    }
    r
}

/// What the run creator achieved.
struct Created {
    /// Runs whose `POST /v1/runs` returned 201, in order.
    acknowledged: Vec<String>,
    /// POSTs that failed (connection refused or reset, or an error status).
    failed_posts: usize,
    /// One SSE follower per acknowledged run.
    followers: Vec<tokio::task::JoinHandle<()>>,
}

/// What SSE clients saw, per run: the `data` of each event, in order.
type Seen = Arc<Mutex<HashMap<String, Vec<Value>>>>;

/// A random live server, if any.
fn any_server(current: &Mutex<Vec<String>>, rng: &mut Rng) -> Option<String> {
    let live = current.lock().unwrap();
    if live.is_empty() {
        return None;
    }
    Some(live[rng.below(live.len() as u64) as usize].clone())
}

/// Starts runs until `runs` are acknowledged and `kills_done` is set (at
/// most [`MAX_RUNS`]), each through a random live server, and follows each
/// over SSE.
async fn create_runs(
    client: reqwest::Client,
    current: Arc<Mutex<Vec<String>>>,
    mut rng: Rng,
    runs: usize,
    spacing_ms: u64,
    seen: Seen,
    kills_done: Arc<AtomicBool>,
) -> Created {
    let mut created = Created {
        acknowledged: Vec::new(),
        failed_posts: 0,
        followers: Vec::new(),
    };
    let more = |n: usize| n < runs || (n < MAX_RUNS && !kills_done.load(Ordering::Relaxed));
    while more(created.acknowledged.len()) {
        let Some(base) = any_server(&current, &mut rng) else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let response = client
            .post(format!("{base}/v1/runs"))
            .bearer_auth(TOKEN)
            .json(&json!({"agent": "journal", "input": "go"}))
            .send()
            .await;
        match response {
            Ok(r) if r.status() == 201 => match r.json::<Value>().await {
                Ok(body) => {
                    let id = body["run_id"]
                        .as_str()
                        .expect("run_id in 201 body")
                        .to_owned();
                    created.followers.push(tokio::spawn(follow(
                        client.clone(),
                        current.clone(),
                        Rng::new(rng.next()),
                        id.clone(),
                        seen.clone(),
                    )));
                    created.acknowledged.push(id);
                    // Spread the runs over several server lifetimes.
                    tokio::time::sleep(Duration::from_millis(rng.below(spacing_ms))).await;
                }
                // The server died while sending the body: the run may exist.
                Err(_) => created.failed_posts += 1,
            },
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                // A quota may refuse a start for a moment (429): try again.
                if !status.is_server_error() && status != 429 {
                    panic!("POST /v1/runs answered {status}: {body}");
                }
                created.failed_posts += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(_) => {
                created.failed_posts += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    created
}

/// Follows a run's events over SSE until `run_finished`, through random live
/// servers, resuming after the last event seen whenever a server dies.
async fn follow(
    client: reqwest::Client,
    current: Arc<Mutex<Vec<String>>>,
    mut rng: Rng,
    run: String,
    seen: Seen,
) {
    let mut last = 0u64;
    loop {
        let Some(base) = any_server(&current, &mut rng) else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let response = client
            .get(format!("{base}/v1/runs/{run}/events"))
            .bearer_auth(TOKEN)
            .header("last-event-id", last.to_string())
            .timeout(Duration::from_secs(120))
            .send()
            .await;
        if std::env::var_os("WEFT_CRASH_TRACE").is_some() {
            eprintln!("follow {run}: after {last} from {base}");
        }
        let Ok(mut response) = response else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        if response.status() != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let mut buffer = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) else {
                    continue;
                };
                let event: Value = serde_json::from_str(data.trim()).expect("SSE data is JSON");
                let seq = event["seq"].as_u64().expect("seq in SSE event");
                assert_eq!(seq, last + 1, "run {run}: SSE skipped from {last} to {seq}");
                last = seq;
                let finished = event["type"] == "run_finished";
                seen.lock()
                    .unwrap()
                    .entry(run.clone())
                    .or_default()
                    .push(event);
                if finished {
                    return;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What SSE clients saw must be the stored log, event for event.
fn compare_with_sse(
    logs: &BTreeMap<String, (RunRecord, Vec<RunEvent>)>,
    seen: &HashMap<String, Vec<Value>>,
    violations: &mut Vec<String>,
) {
    for (run, events) in seen {
        let Some((_, stored)) = logs.get(run) else {
            violations.push(format!("run {run}: seen over SSE but not stored"));
            continue;
        };
        let stored: Vec<Value> = stored
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        if *events != stored {
            let first = events
                .iter()
                .zip(&stored)
                .position(|(a, b)| a != b)
                .unwrap_or(events.len().min(stored.len()));
            violations.push(format!(
                "run {run}: SSE saw {} events, the store holds {}; first difference at index \
                 {first}: {:?} vs {:?}",
                events.len(),
                stored.len(),
                events.get(first),
                stored.get(first)
            ));
        }
    }
}

/// `(run_id, status)` of every run the server lists for the tenant, page
/// after page.
async fn list_runs(
    client: &reqwest::Client,
    base: &str,
) -> Result<Vec<(String, String)>, reqwest::Error> {
    let mut runs = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut request = client
            .get(format!("{base}/v1/runs"))
            .bearer_auth(TOKEN)
            .query(&[("limit", "500")]);
        if let Some(c) = &cursor {
            request = request.query(&[("cursor", c.as_str())]);
        }
        let body: Value = request.send().await?.error_for_status()?.json().await?;
        runs.extend(body["runs"].as_array().unwrap().iter().map(|r| {
            (
                r["run_id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        }));
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(runs),
        }
    }
}

/// The durability mode of the `n`th server started.
fn durability(n: usize) -> &'static str {
    if n.is_multiple_of(2) {
        "process"
    } else {
        "sync"
    }
}

/// Starts servers over one store.
struct Harness {
    db: String,
    dir: PathBuf,
    journal: PathBuf,
    incarnations: usize,
}

impl Harness {
    fn log_path(&self, n: usize) -> PathBuf {
        self.dir.join(format!("serve-{n}.log"))
    }

    /// Starts `weft serve` on a free port and waits until it is healthy.
    async fn start(&mut self, client: &reqwest::Client) -> Server {
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/journal.toml");
        for _attempt in 0..3 {
            self.incarnations += 1;
            let log_path = self.log_path(self.incarnations);
            let log = std::fs::File::create(&log_path).unwrap();
            let port = free_port();
            let child = Command::new(env!("CARGO_BIN_EXE_weft"))
                .arg("serve")
                .arg("--agent")
                .arg(&agent)
                .arg("--db")
                .arg(&self.db)
                .arg("--addr")
                .arg(format!("127.0.0.1:{port}"))
                .arg("--lease-ttl-ms")
                .arg(LEASE_TTL_MS.to_string())
                // Servers alternate between the two durability modes, so
                // kills land in both: `sync` (a sync per commit group) and
                // `process` (none; a killed process loses nothing either).
                .arg("--durability")
                .arg(durability(self.incarnations))
                .env("WEFT_TOKENS", format!("crash={TOKEN}"))
                .env("WEFT_JOURNAL_DIR", &self.journal)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("spawning weft serve");
            let mut server = Server {
                child,
                base: format!("http://127.0.0.1:{port}"),
                log: log_path,
            };
            let deadline = Instant::now() + HEALTH_TIMEOUT;
            loop {
                if let Some(status) = server.child.try_wait().unwrap() {
                    let log = server.log_tail();
                    if log.contains("listening on") {
                        break; // The port was taken meanwhile: try another.
                    }
                    panic!("weft serve exited with {status} before becoming healthy\n{log}");
                }
                let health = client
                    .get(format!("{}/healthz", server.base))
                    .timeout(Duration::from_secs(1))
                    .send()
                    .await;
                if matches!(&health, Ok(r) if r.status() == 200) {
                    return server;
                }
                if Instant::now() > deadline {
                    panic!(
                        "weft serve did not answer /healthz within {} s\n{}",
                        HEALTH_TIMEOUT.as_secs(),
                        server.log_tail()
                    );
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        panic!("could not start weft serve on a free port in 3 attempts");
    }

    /// How many runs the `n`th server said it recovered.
    fn recovered_count(&self, n: usize) -> usize {
        let log = std::fs::read_to_string(self.log_path(n)).unwrap_or_default();
        log.split_once(" unfinished run(s) recovered")
            .and_then(|(head, _)| head.rsplit('(').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// A running `weft serve`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Server {
    /// SIGKILL, then reap.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's output, for failure messages.
    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let start = text.len().saturating_sub(4000);
        let start = (start..=text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        format!("--- {} ---\n{}", self.log.display(), &text[start..])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn seed_from_clock() -> u64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    d.as_secs() ^ u64::from(d.subsec_nanos()).rotate_left(32) ^ u64::from(std::process::id())
}

/// splitmix64: small, seedable, good enough for delays.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
