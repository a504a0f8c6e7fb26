//! The suite harness: the shared CLI (libtest flags + suite flags), trial construction for
//! libtest-mimic, the server pool and the runner that writes the results folder.
