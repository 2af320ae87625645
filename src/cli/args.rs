//! The command line, declared with clap's derive API. Nothing else.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use kbxscope::io::BufferSize;

/// Read GnuPG keybox files (pubring.kbx) through an instrumented buffered
/// file layer and show what the I/O costs.
#[derive(Debug, Parser)]
#[command(name = "kbxscope", version, about, max_term_width = 100)]
pub struct Cli {
    /// Read buffer for keybox files. A bare number is KiB as in GnuPG
    /// (0 = the 8 KiB stream default, others round up to a multiple of
    /// 8 KiB); with a unit it is exact (4096B, 12k, 12KiB, 1M, 1MiB);
    /// 'unbuffered' sends every read to the operating system. At most 1 GiB.
    #[arg(long, global = true, value_name = "SIZE", default_value = "64")]
    pub kbx_buffer_size: BufferSize,

    /// After the command, print the file events per operation, bytes read,
    /// logical reads and time per operation to stderr.
    #[arg(long, global = true, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text")]
    pub io_summary: Option<SummaryFormat>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Format of `--io-summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// A small table.
    Text,
    /// One JSON object on one line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Count blobs, exactly as `kbxutil --stats` prints them.
    Stats(StatsArgs),
    /// Print every blob's fields, as `kbxutil` dumps them.
    Dump(FileArg),
    /// List keys and certificates, like `gpg -k` and `gpgsm -k`.
    List(ListArgs),
    /// Search like GnuPG: from the start, stopping at the first match.
    Find(FindArgs),
}

/// A keybox path.
#[derive(Debug, Args)]
pub struct FileArg {
    /// The keybox file (e.g. ~/.gnupg/pubring.kbx).
    #[arg(value_name = "FILE", value_parser = keybox_path)]
    pub file: PathBuf,
}

/// Arguments of `stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// Print the numbers as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// Which blobs to list.
    #[arg(long = "type", value_enum, default_value_t = KeyType::All)]
    pub key_type: KeyType,
    /// One JSON object per key, one per line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `find`.
#[derive(Debug, Args)]
pub struct FindArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// GnuPG-style patterns (a key matches if any pattern does): a
    /// fingerprint, a 16- or 8-digit key id (optional 0x), <mail>, @part-of-mail,
    /// /SUBJECT-DN, #SERIAL[/ISSUER-DN], =exact user id, or text.
    #[arg(value_name = "PATTERN", required = true)]
    pub patterns: Vec<String>,
    /// Report every match instead of stopping at the first.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per match, one per line.
    #[arg(long)]
    pub json: bool,
}

/// `--type` of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyType {
    /// OpenPGP keys.
    Openpgp,
    /// X.509 certificates.
    X509,
    /// Both.
    All,
}

fn keybox_path(s: &str) -> Result<PathBuf, String> {
    match s {
        "" => Err("the keybox path is empty".into()),
        "-" => Err("'-' is not a keybox: kbxscope reads keyboxes from files, not from standard input".into()),
        _ => Ok(PathBuf::from(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_parse_anywhere() {
        let cli = Cli::try_parse_from(["kbxscope", "stats", "x.kbx", "--kbx-buffer-size", "16", "--io-summary=json"])
            .unwrap();
        assert_eq!(cli.kbx_buffer_size, BufferSize::Bytes(16384));
        assert_eq!(cli.io_summary, Some(SummaryFormat::Json));
        let cli = Cli::try_parse_from(["kbxscope", "--io-summary", "dump", "x.kbx"]).unwrap();
        assert_eq!(cli.io_summary, Some(SummaryFormat::Text));
        assert_eq!(cli.kbx_buffer_size, BufferSize::Bytes(65536));
    }

    #[test]
    fn rejects_dash_and_bad_sizes() {
        assert!(Cli::try_parse_from(["kbxscope", "stats", "-"]).is_err());
        assert!(Cli::try_parse_from(["kbxscope", "stats", "x", "--kbx-buffer-size", "-1"]).is_err());
        assert!(Cli::try_parse_from(["kbxscope", "stats", "x", "--kbx-buffer-size", "0B"]).is_err());
    }
}
