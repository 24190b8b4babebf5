//! How the command line fails: bad input is one line on stderr and exit code
//! 2; a failure while running is one line and exit code 1.

use std::process::ExitCode;

pub enum CliError {
    /// The user's input is wrong (unknown preset, bad size, malformed spec).
    Usage(String),
    /// Something failed while running.
    Failed(String),
}

impl CliError {
    pub fn exit(self) -> ExitCode {
        match self {
            CliError::Usage(m) => {
                eprintln!("error: {m}");
                ExitCode::from(2)
            }
            CliError::Failed(m) => {
                eprintln!("error: {m}");
                ExitCode::from(1)
            }
        }
    }
}

/// Help and version go to stdout with exit 0; parse errors become one line and exit 2.
pub fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("error: {}", clap_line(&e));
            ExitCode::from(2)
        }
    }
}

/// A parse error as one line. `flashkv kv` with no subcommand is a usage
/// error like any other missing argument, named by its usage line.
pub fn clap_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let usage = rendered
            .lines()
            .find_map(|l| l.trim().strip_prefix("Usage: "))
            .unwrap_or("flashkv <COMMAND>");
        return format!("a subcommand is missing: {usage} (see --help)");
    }
    // clap's message runs until the blank line before "Usage:"; fold it into one line.
    let msg: Vec<&str> = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = msg.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    if let Some(opt) = misplaced_kv_option(e, &rendered) {
        return format!(
            "{msg}: {opt} is an option of `kv` and goes before its subcommand: \
             flashkv kv --db FILE put KEY VALUE (see --help)"
        );
    }
    if negative_number(e) {
        return format!(
            "{msg}: no number flashkv takes is negative; a key or value that starts \
             with '-' goes after `--`: flashkv kv --db FILE put KEY -- -1 (see --help)"
        );
    }
    format!("{msg} (see --help)")
}

/// Whether a parse error is a negative number taken for an option.
fn negative_number(e: &clap::Error) -> bool {
    e.kind() == clap::error::ErrorKind::UnknownArgument
        && e.get(clap::error::ContextKind::InvalidArg)
            .is_some_and(|a| a.to_string().parse::<f64>().is_ok_and(|v| v < 0.0))
}

/// The `kv` option a parse error found after `kv`'s subcommand, if any
/// (`flashkv kv put a b --db x`): one of the long options `KvArgs` has.
fn misplaced_kv_option(e: &clap::Error, rendered: &str) -> Option<String> {
    use clap::Args;
    if e.kind() != clap::error::ErrorKind::UnknownArgument || !rendered.contains("flashkv kv ") {
        return None;
    }
    let arg = e.get(clap::error::ContextKind::InvalidArg)?.to_string();
    let name = arg.split('=').next().unwrap_or(&arg).strip_prefix("--")?;
    let kv = crate::kv::KvArgs::augment_args(clap::Command::new("kv"));
    let known = kv.get_arguments().any(|a| a.get_long() == Some(name));
    known.then(|| format!("--{name}"))
}

impl From<flashkv_device::DeviceError> for CliError {
    fn from(e: flashkv_device::DeviceError) -> Self {
        use flashkv_device::DeviceError as D;
        match e {
            D::Spec(_)
            | D::BadInput(_)
            | D::UnknownPreset { .. }
            | D::Misaligned { .. }
            | D::OutOfRange { .. } => CliError::Usage(e.to_string()),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<flashkv_lab::profile::ProfileError> for CliError {
    fn from(e: flashkv_lab::profile::ProfileError) -> Self {
        use flashkv_lab::profile::ProfileError as P;
        match e {
            P::Device(d) => d.into(),
            other => CliError::Usage(other.to_string()),
        }
    }
}

impl From<flashkv_lab::lab::LabError> for CliError {
    fn from(e: flashkv_lab::lab::LabError) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// Prints `v` as JSON on stdout.
pub fn print_json(v: &impl serde::Serialize) -> Result<(), CliError> {
    let s = serde_json::to_string_pretty(v).map_err(|e| CliError::Failed(e.to_string()))?;
    println!("{s}");
    Ok(())
}
