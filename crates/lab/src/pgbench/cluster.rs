//! The throw-away PostgreSQL cluster. It is built once per run on local
//! disk (initdb, pgbench -i into a tablespace, a checkpoint, a clean stop)
//! and its tablespace folder and WAL folder become two ext4 images
//! (`mkfs.ext4 -d`, 8 KiB blocks so a PostgreSQL page is one file-system
//! block and one NBD request): copying an image onto a served drive takes
//! seconds where loading through FUSE at the model's speed took minutes.
//! The drives are then mounted where those folders were, so the cluster's
//! tablespace link and WAL link point into them.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::drive::run;
use super::host::Host;
use super::procs::{self, Stack};
use super::Size;
use crate::lab::LabError;

/// Size of both file systems: the whole of the 2 GiB SSD presets (on the
/// HDD, its first 2 GiB).
pub const FS_BYTES: &str = "2G";

/// What the build left in the work folder.
pub struct Template {
    pub work: PathBuf,
    pub pgdata: PathBuf,
    /// Empty folders the drives are mounted on.
    pub data_dir: PathBuf,
    pub wal_dir: PathBuf,
    pub sock: PathBuf,
    pub data_img: PathBuf,
    pub wal_img: PathBuf,
}

fn io(what: &str) -> impl Fn(std::io::Error) -> LabError + '_ {
    move |e| LabError::Run(format!("{what}: {e}"))
}

/// A folder owned by the postgres user.
fn pg_dir(host: &Host, p: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(p).map_err(io("mkdir"))?;
    std::os::unix::fs::chown(p, Some(host.uid), Some(host.gid)).map_err(io("chown"))
}

/// A command run as the postgres user.
fn as_postgres(host: &Host, program: &Path) -> Command {
    let mut c = procs::command(program);
    c.uid(host.uid).gid(host.gid).env("LC_ALL", "C");
    c
}

/// `psql -c sql` as the postgres user over the cluster's socket; its output.
pub fn psql(host: &Host, t: &Template, sql: &str) -> Result<String, LabError> {
    let out = t.work.join("psql.out");
    let mut c = procs::command(&host.psql);
    c.arg("-h")
        .arg(&t.sock)
        .args(["-U", "postgres", "-XAtq", "-c", sql, "postgres"]);
    run(c, "psql", &out)?;
    std::fs::read_to_string(&out).map_err(io("psql output"))
}

/// Starts `postgres -D pgdata` with `settings` and waits until it answers.
pub fn start(
    stack: &mut Stack,
    host: &Host,
    t: &Template,
    pgdata: &Path,
    settings: &[&str],
) -> Result<usize, LabError> {
    let mut c = as_postgres(host, &host.pg_bin.join("postgres"));
    c.arg("-D").arg(pgdata);
    for s in settings {
        c.args(["-c", s]);
    }
    let log = std::fs::File::create(t.work.join("postgres.log")).map_err(io("log"))?;
    let child = c
        .stdout(log.try_clone().map_err(io("log"))?)
        .stderr(log)
        .spawn()
        .map_err(io("postgres"))?;
    // SIGQUIT: an immediate stop, the cluster is thrown away.
    let i = stack.process(child, libc::SIGQUIT);
    procs::wait_for("postgres", Duration::from_secs(60), || {
        if let Ok(Some(st)) = stack.child(i).try_wait() {
            let l = std::fs::read_to_string(t.work.join("postgres.log")).unwrap_or_default();
            return Err(LabError::Run(format!(
                "postgres exited ({st}): {}",
                l.trim()
            )));
        }
        Ok(psql(host, t, "select 1").is_ok())
    })?;
    Ok(i)
}

/// Initialises the cluster in `work`, loads pgbench's tables at `scale`
/// and makes the two images.
pub fn build(
    stack: &mut Stack,
    host: &Host,
    work: &Path,
    size: Size,
) -> Result<Template, LabError> {
    let t = Template {
        work: work.to_path_buf(),
        pgdata: work.join("pgdata"),
        data_dir: work.join("data"),
        wal_dir: work.join("wal"),
        sock: work.join("sock"),
        data_img: work.join("data.img"),
        wal_img: work.join("wal.img"),
    };
    for d in [&t.pgdata, &t.data_dir, &t.wal_dir, &t.sock] {
        pg_dir(host, d)?;
    }
    let mut c = as_postgres(host, &host.pg_bin.join("initdb"));
    c.arg("-D")
        .arg(&t.pgdata)
        .arg("--waldir")
        .arg(t.wal_dir.join("pg_wal"));
    c.args([
        "-N",
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C",
    ]);
    run(c, "initdb", &work.join("initdb.log"))?;
    let conf = format!(
        "\n# flashkv lab pgbench\nlisten_addresses = ''\nunix_socket_directories = '{}'\nshared_buffers = {}\nmax_connections = 20\n",
        t.sock.display(),
        SHARED_BUFFERS
    );
    append(&t.pgdata.join("postgresql.conf"), &conf)?;
    // Loading only: no fsync, no WAL for the tables COPY fills.
    let load = [
        "fsync=off",
        "wal_level=minimal",
        "max_wal_senders=0",
        "min_wal_size=32MB",
        "autovacuum=off",
    ];
    let pg = start(stack, host, &t, &t.pgdata, &load)?;
    pg_dir(host, &t.data_dir.join("ts"))?;
    let ts = format!(
        "create tablespace ts location '{}'",
        t.data_dir.join("ts").display()
    );
    psql(host, &t, &ts)?;
    let mut c = procs::command(&host.pgbench);
    c.arg("-h")
        .arg(&t.sock)
        .args(["-U", "postgres", "-i", "-q", "-s"]);
    c.arg(size.scale.to_string())
        .args(["--tablespace=ts", "--index-tablespace=ts", "postgres"]);
    run(c, "pgbench -i", &work.join("pgbench-init.log"))?;
    psql(host, &t, "checkpoint")?;
    // A clean (fast) stop: the images must hold a shut-down cluster.
    procs::stop(stack.child(pg), libc::SIGINT, Duration::from_secs(60));
    image(host, &t.data_dir, &t.data_img, work)?;
    image(host, &t.wal_dir, &t.wal_img, work)?;
    Ok(t)
}

/// shared_buffers: small against the data, as the seed's 312 MB buffer was
/// against its 64 warehouses (about 5 %).
pub const SHARED_BUFFERS: &str = "16MB";

fn append(path: &Path, text: &str) -> Result<(), LabError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io("postgresql.conf"))?;
    f.write_all(text.as_bytes()).map_err(io("postgresql.conf"))
}

/// An ext4 image of `dir`'s contents (no journal: fuse2fs 1.47 does not
/// write one), then `dir` emptied to be a mount point.
fn image(host: &Host, dir: &Path, img: &Path, work: &Path) -> Result<(), LabError> {
    let mut c = procs::command(&host.mkfs);
    c.args(["-q", "-F", "-b", "8192", "-O", "^has_journal"])
        .args(["-E", "lazy_itable_init=1,nodiscard", "-d"])
        .arg(dir)
        .arg(img)
        .arg(FS_BYTES);
    run(c, "mkfs.ext4", &work.join("mkfs.log"))?;
    for e in std::fs::read_dir(dir).map_err(io("read_dir"))? {
        let p = e.map_err(io("read_dir"))?.path();
        let gone = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        gone.map_err(io("emptying a mount point"))?;
    }
    Ok(())
}

/// What pgbench printed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub tps: f64,
    pub transactions: u64,
    pub latency_avg_ms: f64,
}

/// Reads pgbench's summary lines.
pub fn parse_summary(text: &str) -> Option<Summary> {
    let after = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
    };
    Some(Summary {
        tps: after("tps = ")?.parse().ok()?,
        transactions: after("number of transactions actually processed: ")?
            .parse()
            .ok()?,
        latency_avg_ms: after("latency average = ")?.parse().ok()?,
    })
}

/// Runs pgbench (TPC-B-like, no vacuum) for `secs`; with `log`, one line
/// per transaction goes to pgbench_log.* in `dir`.
pub fn pgbench(
    host: &Host,
    t: &Template,
    size: Size,
    secs: u64,
    log: Option<&Path>,
) -> Result<(Summary, Duration), LabError> {
    let mut c = procs::command(&host.pgbench);
    c.arg("-h").arg(&t.sock).args(["-U", "postgres", "-n"]);
    c.arg(format!("--client={}", size.clients))
        .arg(format!("--jobs={}", size.threads))
        .arg(format!("--time={secs}"));
    let out = match log {
        Some(dir) => {
            c.arg("--log").current_dir(dir);
            dir.join("pgbench.out")
        }
        None => t.work.join("pgbench-warmup.out"),
    };
    c.arg("postgres");
    let began = Instant::now();
    run(c, "pgbench", &out)?;
    let wall = began.elapsed();
    let text = std::fs::read_to_string(&out).map_err(io("pgbench output"))?;
    let s = parse_summary(&text)
        .ok_or_else(|| LabError::Run(format!("pgbench printed no summary: {}", text.trim())))?;
    Ok((s, wall))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_summaries_parse_and_garbage_does_not() {
        let text = "transaction type: <builtin: TPC-B (sort of)>\nscaling factor: 20\n\
                    number of transactions actually processed: 653\nnumber of failed transactions: 0 (0.000%)\n\
                    latency average = 252.797 ms\ninitial connection time = 12.2 ms\n\
                    tps = 31.645990 (without initial connection time)\n";
        assert_eq!(
            parse_summary(text),
            Some(Summary {
                tps: 31.64599,
                transactions: 653,
                latency_avg_ms: 252.797
            })
        );
        assert_eq!(parse_summary("tps = x\n"), None);
        assert_eq!(parse_summary(""), None);
    }
}
