//! The verbs of `cargo tune`: the context every verb shares and the dispatch to them. The
//! probing verbs are in `tune.rs` and `tune_gpus.rs`, the verbs on stored profiles in
//! `profiles.rs`.

use super::{profiles, tune, tune_gpus};
use super::{Cli, Command};
use crate::env::env_error;
use crate::exit::{CliError, Exit};
use memtune_core::lookup::{self, LookupConfig, PROJECT_DIR};
use memtune_core::profile::is_valid_uuid;
use memtune_core::store::Store;
use memtune_core::userio::WriteOptions;
use std::path::PathBuf;

/// What every verb needs: output mode, how outputs are written, and the two stores.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) json: bool,
    pub(super) quiet: bool,
    pub(super) project_root: PathBuf,
    pub(super) write: WriteOptions,
}

impl Ctx {
    pub(super) fn project(&self) -> Store {
        Store::new(self.project_root.join(PROJECT_DIR))
    }

    /// The user cache; `None` where the platform has none. `MEMTUNE_CACHE_DIR` set but
    /// empty is an error, not the default.
    pub(super) fn cache(&self) -> Result<Option<Store>, CliError> {
        let dir = lookup::cache_dir_from_env().map_err(env_error)?;
        Ok(dir.map(Store::new))
    }

    /// The user cache, which must exist (to write to).
    pub(super) fn cache_store(&self) -> Result<Store, CliError> {
        self.cache()?.ok_or_else(|| {
            CliError::new(
                Exit::Io,
                "this platform has no user cache directory; set MEMTUNE_CACHE_DIR to a writable directory",
            )
        })
    }

    /// A line on stderr (above any progress bars), unless quiet.
    pub(super) fn note(&self, msg: &str) {
        if !self.quiet {
            crate::progress::eprint_line(msg);
        }
    }

    pub(super) fn lookup_config(&self) -> Result<LookupConfig, CliError> {
        LookupConfig::try_from_env(Some(&self.project_root)).map_err(env_error)
    }
}

pub fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    crate::progress::hide_bars(cli.global.json);
    let ctx = Ctx {
        json: cli.global.json,
        quiet: cli.global.quiet,
        project_root: lookup::current_project_root(),
        write: WriteOptions {
            follow_symlinks: cli.global.follow_symlinks,
        },
    };
    match cli.command {
        None => tune_gpus::tune(&ctx, &cli.tune),
        Some(Command::Devices) => profiles::devices(&ctx),
        Some(Command::List) => profiles::list(&ctx),
        Some(Command::Show { uuid, path, plot }) => {
            profiles::show(&ctx, uuid.as_deref(), path.as_deref(), plot.as_deref())
        }
        Some(Command::Probe {
            simulate,
            output,
            gpu,
            probe,
        }) => tune::probe_to_file(&ctx, simulate.as_deref(), &output, gpu, &probe),
        Some(Command::Path) => profiles::path(&ctx),
        Some(Command::Verify { files }) => profiles::verify(&ctx, &files),
        Some(Command::Check {
            dir,
            allow_simulated,
        }) => {
            let dir = dir.unwrap_or_else(|| ctx.project().dir().to_path_buf());
            super::check::run(&dir, allow_simulated, ctx.json)
        }
        Some(Command::Export { uuid, output }) => profiles::export(&ctx, &uuid, &output),
        Some(Command::Import { file, project }) => profiles::import(&ctx, &file, project),
        Some(Command::Plan(command)) => super::plan::run(&command, ctx.json, ctx.quiet),
        Some(Command::Chase(args)) => super::raw::chase(ctx.json, &args),
        Some(Command::Sample(args)) => super::raw::sample(ctx.json, &args),
        Some(Command::Bench(args)) => crate::bench::run(&args, ctx.json, ctx.quiet, ctx.write),
        Some(Command::Reuse(args)) => super::reuse::run(&args, ctx.json, ctx.quiet, ctx.write),
        Some(Command::Trace(args)) => super::trace::run(&args, ctx.quiet, ctx.write),
        Some(Command::Report(args)) => super::report::run(&ctx, &args),
        Some(Command::Infer(args)) => super::infer::run(&args, (ctx.json, ctx.quiet), ctx.write),
        Some(Command::Decisions(cmd)) => {
            super::decisions::run(&cmd, ctx.json, ctx.quiet, &ctx.project_root, ctx.write)
        }
    }
}

pub(super) fn check_uuid(uuid: &str) -> Result<(), CliError> {
    if is_valid_uuid(uuid) {
        Ok(())
    } else {
        Err(CliError::new(
            Exit::Usage,
            format!("`{uuid}` is not a GPU UUID; expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx as `cargo tune devices` prints it"),
        ))
    }
}

pub(crate) fn print_json(value: &serde_json::Value) {
    println!("{value:#}");
}
