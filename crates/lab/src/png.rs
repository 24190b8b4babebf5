//! PNG copies of the SVG plots (resvg), for papers and viewers without
//! SVG. Text is laid out with the system's fonts; where there are none, no
//! PNG is written (its text would be missing), and [`fonts_found`] says so.

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

/// Pixels per SVG pixel: a PNG twice the SVG's size prints sharply.
const SCALE: f32 = 2.0;

/// The system's fonts, loaded once, with the generic `sans-serif` the
/// plots ask for mapped to a sans face that is installed (fontdb's default
/// is Arial, rarely present on Linux).
fn fonts() -> &'static Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
            .collect();
        let sans = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
            .iter()
            .map(|s| s.to_string())
            .find(|s| families.contains(s))
            .or_else(|| families.iter().find(|n| n.contains("Sans")).cloned());
        if let Some(family) = sans {
            db.set_sans_serif_family(family);
        }
        Arc::new(db)
    })
}

/// Whether the system has fonts for the PNGs' text (`apt-get install
/// fonts-dejavu-core` where it has none).
pub fn fonts_found() -> bool {
    !fonts().is_empty()
}

/// Renders `svg` to a PNG at `path`; writes nothing where there are no fonts.
pub fn write(svg: &str, path: &Path) -> io::Result<()> {
    if !fonts_found() {
        return Ok(());
    }
    let opt = usvg::Options {
        fontdb: Arc::clone(fonts()),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(io::Error::other)?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * SCALE).ceil() as u32,
        (size.height() * SCALE).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| io::Error::other(format!("a {w}x{h} image cannot be made")))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    let png = pixmap.encode_png().map_err(io::Error::other)?;
    std::fs::write(path, png)
}
