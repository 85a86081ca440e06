//! Records the Python the build was set up with (`EERIE_PYTHON`, which
//! ci/setup.sh exports), so the built binary finds its compiler library
//! without the variable at run time (see src/discover.rs).

fn main() {
    println!("cargo:rerun-if-env-changed=EERIE_PYTHON");
    if let Some(python) = std::env::var_os("EERIE_PYTHON").filter(|p| !p.is_empty()) {
        if let Some(python) = python.to_str() {
            println!("cargo:rustc-env=PARITY_BUILD_EERIE_PYTHON={python}");
        }
    }
}
