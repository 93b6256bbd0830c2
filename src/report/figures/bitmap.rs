//! The PNG backend: plotters' bitmap backend with text drawn at each glyph's own left side
//! bearing. plotters' ab_glyph text puts every glyph's ink at the pen position, so a
//! narrow letter with a wide bearing sits too far left and words come apart ("SE TNX",
//! "WAIT1" in the matrix PNG); everything but text passes straight through.

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind};

/// [`BitMapBackend`] with text laid out glyph by glyph as the font says.
pub struct GlyphExact<'a>(pub BitMapBackend<'a>);

type Error<'a> = DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>;

impl<'a> DrawingBackend for GlyphExact<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), Error<'a>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), Error<'a>> {
        self.0.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), Error<'a>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), Error<'a>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), Error<'a>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), Error<'a>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), Error<'a>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), Error<'a>> {
        self.0.fill_polygon(vertices, style)
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<(), Error<'a>> {
        self.0.blit_bitmap(pos, size, src)
    }

    /// As plotters' default (the same box, anchor and baseline), but each glyph's ink
    /// starts at its pen position plus its left side bearing.
    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), Error<'a>> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -(max_x - min_x),
            HPos::Center => -(max_x - min_x) / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -(max_y - min_y) / 2,
            VPos::Bottom => -(max_y - min_y),
        };
        let Ok(font) = FontRef::try_from_slice(dejavu::sans::regular()) else {
            unreachable!("the embedded DejaVu Sans is a valid font");
        };
        let size = style.size() as f32;
        let font = font.as_scaled(size);
        let transform = style.transform();
        let (width, height) = self.get_size();
        let mut pen = 0.0f32;
        let mut previous = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(previous) = previous {
                pen += font.kern(previous, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), point(pen, 0.0));
            pen += font.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            // plotters' baseline: half the size below the box's top.
            let (left, top) = (bounds.min.x as i32, (size / 2.0 + bounds.min.y) as i32);
            let mut pixels = Vec::new();
            outline.draw(|x, y, coverage| pixels.push((x as i32, y as i32, coverage)));
            for (x, y, coverage) in pixels {
                let (x, y) = transform.transform(left + x + dx - min_x, top + y + dy - min_y);
                let (x, y) = (pos.0 + x, pos.1 + y);
                if x >= 0 && y >= 0 && x < width as i32 && y < height as i32 {
                    let ink = BackendColor {
                        alpha: colour.alpha * f64::from(coverage),
                        rgb: colour.rgb,
                    };
                    self.0.draw_pixel((x, y), ink)?;
                }
            }
        }
        Ok(())
    }
}
