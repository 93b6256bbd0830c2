//! The PNG backend: plotters' bitmap backend with text drawn at each glyph's own left side
//! bearing and on one baseline. plotters' ab_glyph text puts every glyph's ink at the pen
//! position, so a narrow letter with a wide bearing sits too far left and words come apart
//! ("SE TNX", "WAIT1" in the matrix PNG); and it places each glyph by truncating a
//! half-pixel baseline plus the glyph's top, which rounds a tall glyph down and a short one
//! up, so at odd sizes letters stand a pixel lower than a comma and a period floats (a
//! comma's tail then hides under the letters' feet and it reads as a period).
//! Everything but text passes straight through.

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

    /// As plotters' default (the same box and anchor), but each glyph's ink starts at its
    /// pen position plus its left side bearing, and every glyph stands on one whole-pixel
    /// baseline.
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
        // plotters' baseline, half the size below the box's top, on a whole pixel (where
        // plotters' own text puts most letters) so that edges on it stay sharp.
        let baseline = (size / 2.0).ceil();
        let mut pen = 0.0f32;
        let mut previous = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(previous) = previous {
                pen += font.kern(previous, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), point(pen, baseline));
            pen += font.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            // Whole pixels (px_bounds rounds outwards), so the casts are exact.
            let bounds = outline.px_bounds();
            let (left, top) = (bounds.min.x as i32, bounds.min.y as i32);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` drawn black on white at plotters size 13 (the fault labels' size; an odd
    /// size puts plotters' baseline on a half pixel): the lowest row with dark ink.
    fn lowest_dark_row(text: &str) -> usize {
        super::super::register_font();
        let (width, height) = (60u32, 30u32);
        let mut pixels = vec![0u8; (width * height * 3) as usize];
        {
            let root =
                GlyphExact(BitMapBackend::with_buffer(&mut pixels, (width, height))).into_drawing_area();
            root.fill(&WHITE).unwrap();
            root.draw(&Text::new(text, (4, 4), ("sans-serif", 13).into_font()))
                .unwrap();
            root.present().unwrap();
        }
        let dark = |row: usize| {
            pixels[row * width as usize * 3..(row + 1) * width as usize * 3]
                .iter()
                .any(|&v| v < 128)
        };
        (0..height as usize).rfind(|&row| dark(row)).unwrap()
    }

    #[test]
    fn a_comma_hangs_below_the_line_and_a_period_sits_on_it() {
        let line = lowest_dark_row("11");
        assert_eq!(
            lowest_dark_row("1.1"),
            line,
            "a period stands where the digits stand"
        );
        assert!(
            lowest_dark_row("1,1") > line,
            "a comma's tail reaches under the digits' feet"
        );
    }
}
