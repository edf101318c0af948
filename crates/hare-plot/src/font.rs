//! Finding and registering the one font plot text is drawn with.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::style::FontStyle;

/// Fonts tried, in order, when `$HARE_LAB_FONT` is not set.
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

static FONT: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Registers a font for plot text once; returns it, `None` when none was found.
pub fn font() -> Option<&'static Path> {
    FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("HARE_LAB_FONT") {
            candidates.push(PathBuf::from(p));
        }
        candidates.extend(FONT_CANDIDATES.iter().map(PathBuf::from));
        for c in candidates {
            if let Ok(bytes) = std::fs::read(&c) {
                // plotters keeps registered fonts for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Some(c);
                }
            }
        }
        None
    })
    .as_deref()
}
