//! Reports (markdown, HTML with SVG charts, JUnit), run comparison and baseline recalibration.
