//! The verbs of `cargo tune`: the context every verb shares and the dispatch to them. The
//! probing verbs are in `tune.rs`, the verbs on stored profiles in `profiles.rs`.

use super::{profiles, tune};
use super::{Cli, Command};
use crate::exit::{CliError, Exit};
use memtune_core::lookup::{self, LookupConfig, PROJECT_DIR};
use memtune_core::profile::is_valid_uuid;
use memtune_core::store::Store;
use std::path::PathBuf;

/// What every verb needs: output mode and the two stores.
pub(super) struct Ctx {
    pub(super) json: bool,
    pub(super) quiet: bool,
    pub(super) project_root: PathBuf,
}

impl Ctx {
    pub(super) fn project(&self) -> Store {
        Store::new(self.project_root.join(PROJECT_DIR))
    }

    pub(super) fn cache(&self) -> Result<Store, CliError> {
        lookup::default_cache_dir().map(Store::new).ok_or_else(|| {
            CliError::new(
                Exit::Io,
                "this platform has no user cache directory; set MEMTUNE_CACHE_DIR to a writable directory",
            )
        })
    }

    pub(super) fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    pub(super) fn lookup_config(&self) -> LookupConfig {
        LookupConfig::from_env(Some(&self.project_root))
    }
}

pub fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    let ctx = Ctx {
        json: cli.global.json,
        quiet: cli.global.quiet,
        project_root: lookup::current_project_root(),
    };
    match cli.command {
        None => tune::tune(&ctx, &cli.tune),
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
        Some(Command::Bench(args)) => crate::bench::run(&args, ctx.json, ctx.quiet),
        Some(Command::Reuse(args)) => super::reuse::run(&args, ctx.json, ctx.quiet),
        Some(Command::Decisions(cmd)) => {
            super::decisions::run(&cmd, ctx.json, ctx.quiet, &ctx.project_root)
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

pub(super) fn print_json(value: &serde_json::Value) {
    println!("{value:#}");
}
