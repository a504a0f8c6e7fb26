//! Finding the server executable: explicit path, then environment variables, then PATH.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use dfx_core::server::Unavailable;

/// Where to look for one program.
#[derive(Debug, Clone)]
pub(crate) struct ExeLookup<'a> {
    /// Program name on PATH (`vllm-omni`).
    pub program: &'a str,
    /// Explicit path (a flag), with how the user gave it (for messages).
    pub configured: Option<(&'a Path, &'a str)>,
    /// Environment variables tried in order when nothing is configured.
    pub env_vars: &'a [&'a str],
    /// How to configure it, for the "not found" message.
    pub hint: &'a str,
}

/// Resolves with the process environment.
pub(crate) fn find(lookup: &ExeLookup<'_>) -> Result<PathBuf, Unavailable> {
    find_with(lookup, |k| std::env::var_os(k))
}

/// Resolves with an explicit environment (`PATH` included), for tests.
pub(crate) fn find_with(
    lookup: &ExeLookup<'_>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, Unavailable> {
    if let Some((path, source)) = lookup.configured {
        return checked(path, source);
    }
    for var in lookup.env_vars {
        if let Some(v) = env(var).filter(|v| !v.is_empty()) {
            return checked(Path::new(&v), var);
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in(lookup.program, env("PATH"), cwd).map_err(|_| Unavailable::NotFound {
        program: lookup.program.to_string(),
        hint: lookup.hint.to_string(),
    })
}

fn checked(path: &Path, source: &str) -> Result<PathBuf, Unavailable> {
    let executable = std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false);
    if executable {
        Ok(path.to_path_buf())
    } else {
        Err(Unavailable::NotExecutable {
            path: path.to_path_buf(),
            from: source.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HINT: &str = "pass --server-bin, set DFX_SERVER_BIN, or put vllm-omni on PATH";

    fn lookup<'a>(configured: Option<(&'a Path, &'static str)>) -> ExeLookup<'a> {
        ExeLookup {
            program: "vllm-omni",
            configured,
            env_vars: &["DFX_SERVER_BIN"],
            hint: HINT,
        }
    }

    #[test]
    fn missing_everywhere_says_how_to_fix() {
        let empty = tempfile::tempdir().unwrap();
        let path = empty.path().as_os_str().to_owned();
        let err = find_with(&lookup(None), |k| (k == "PATH").then(|| path.clone())).unwrap_err();
        assert_eq!(err.to_string(), format!("vllm-omni not found: {HINT}"));
        assert_eq!(
            err,
            Unavailable::NotFound {
                program: "vllm-omni".into(),
                hint: HINT.into()
            }
        );
    }

    #[test]
    fn path_env_and_flag_in_that_order_of_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("vllm-omni");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str().to_owned();
        let on_path = find_with(&lookup(None), |k| (k == "PATH").then(|| path.clone())).unwrap();
        assert_eq!(on_path, exe);
        let bogus = OsString::from("/nonexistent/vllm-omni");
        let err = find_with(&lookup(None), |k| {
            (k == "DFX_SERVER_BIN").then(|| bogus.clone())
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("/nonexistent/vllm-omni (from DFX_SERVER_BIN) does not exist"),
            "{err}"
        );
        let flag = find_with(&lookup(Some((&exe, "--server-bin"))), |_| None).unwrap();
        assert_eq!(flag, exe);
    }
}
