//! `parity-fixture-server`: the loopback server (`serve`) and the
//! one-request CLI (`run`). Arguments only; the work is in the library.

use clap::{Parser, Subcommand};
use parity_server::artifacts::Artifacts;
use parity_server::leak::Leak;
use parity_server::server::{loopback, serve, ServerConfig};
use parity_server::ServerError;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

/// Serves the subject's production modules through IREE on loopback, for
/// parity's black-box serving checks (docs/serving-blackbox.md).
#[derive(Parser)]
#[command(name = "parity-fixture-server", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Common {
    /// The spec whose weights and audio stages (`audio_encode`, `audio_merge_ple`) are served.
    #[arg(long, default_value = "stages.yaml")]
    spec: PathBuf,
    /// Compiled-artifact cache (default: $PARITY_CACHE_DIR, else ./.parity-cache).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// IREE HAL driver (default: the spec's).
    #[arg(long)]
    driver: Option<String>,
    /// The serving module (slot entry points; `serving-functions.json` beside it).
    #[arg(
        long,
        default_value = "subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz"
    )]
    module: PathBuf,
    /// A leaking variant: serve the leak module of this kind beside `--module`.
    #[arg(long, value_enum)]
    leak: Option<Leak>,
}

#[derive(Subcommand)]
enum Command {
    /// HTTP/1.1 on a loopback address: POST /v1/completions, GET /health.
    Serve {
        #[command(flatten)]
        common: Common,
        /// Loopback address to listen on (port 0: any free port; the chosen
        /// address is printed as `listening on http://ADDR`).
        #[arg(long, default_value = "127.0.0.1:0")]
        bind: String,
        /// Slots in use, batched together in every decode step (at most the
        /// serving module's S).
        #[arg(long, default_value_t = 2)]
        slots: u32,
        /// Requests waiting for a slot before new ones are answered 503.
        #[arg(long, default_value_t = 16)]
        queue: usize,
        /// Open connections before new ones are answered 503.
        #[arg(long, default_value_t = 64)]
        max_connections: usize,
        /// Exit when stdin reaches end of file (a test harness that dies takes the server with it).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Compiles the modules (and every leak variant beside `--module`) into
    /// the artifact cache (or finds them there) and exits.
    Compile {
        #[command(flatten)]
        common: Common,
    },
    /// One request (JSON, from --request or stdin) in, JSON lines out.
    Run {
        #[command(flatten)]
        common: Common,
        /// The request file (default: stdin).
        #[arg(long)]
        request: Option<PathBuf>,
        /// Keep the slots' KV caches and lengths in this file between runs
        /// (read at the start when it exists, written at the end).
        #[arg(long)]
        state: Option<PathBuf>,
    },
}

fn prepare(common: &Common) -> Result<(Arc<Artifacts>, String), ServerError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cache = common
        .cache_dir
        .clone()
        .unwrap_or_else(|| parity_iree::ArtifactCache::default_dir(&cwd));
    let module = match common.leak {
        Some(l) => l.module(&common.module),
        None => common.module.clone(),
    };
    let art = Artifacts::prepare(&common.spec, &module, &cache)?;
    let driver = common
        .driver
        .clone()
        .unwrap_or_else(|| art.target.device().to_string());
    Ok((Arc::new(art), driver))
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve {
            common,
            bind,
            slots,
            queue,
            max_connections,
            exit_with_stdin,
        } => (|| {
            let bind = loopback(&bind)?;
            let (art, driver) = prepare(&common)?;
            if exit_with_stdin {
                std::thread::spawn(|| {
                    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
                    std::process::exit(0);
                });
            }
            let config = ServerConfig {
                bind,
                slots,
                queue,
                max_connections,
                driver,
            };
            serve(art, &config)
        })(),
        Command::Compile { mut common } => (|| {
            prepare(&common)?;
            for leak in [Leak::Kv, Leak::Ple, Leak::Mask] {
                if leak.module(&common.module).exists() {
                    common.leak = Some(leak);
                    prepare(&common)?;
                }
            }
            Ok(())
        })(),
        Command::Run {
            common,
            request,
            state,
        } => (|| {
            let text = match &request {
                Some(p) => std::fs::read_to_string(p)
                    .map_err(|e| ServerError::Refused(format!("{}: {e}", p.display())))?,
                None => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| ServerError::Refused(format!("stdin: {e}")))?;
                    s
                }
            };
            let (art, driver) = prepare(&common)?;
            parity_server::cli::run_one(
                art,
                &driver,
                &text,
                state.as_deref(),
                &mut std::io::stdout().lock(),
            )
        })(),
    };
    if let Err(e) = result {
        eprintln!("parity-fixture-server: {e}");
        std::process::exit(e.exit_code());
    }
}
