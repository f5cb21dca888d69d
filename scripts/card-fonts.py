#!/usr/bin/env python3
"""
Makes the card's fonts (src/card/fonts/):

- Presently Sans, from Liberation Sans 2 (SIL OFL 1.1): Regular and Bold, cut to the Latin, punctuation
  and symbols a card's text mostly is, renamed (the licence reserves the name Liberation for the
  unmodified fonts). Each SVG card carries it as @font-face data, cut again to that card's characters
  (src/card/font-subset.ts); the PNG renderer draws with it, and the card measures text by it.
- Presently Sans Fallback, from DejaVu Sans (Bitstream Vera licence, DejaVu's changes in the public
  domain): Greek, Cyrillic, Hebrew, more Latin, arrows and symbols, for the PNG renderer, which has no
  other fonts. (A browser draws these with the viewer's own fonts.)

Run by hand when the glyph sets change (Debian: apt-get install fonts-liberation2 fonts-dejavu-core
python3-fonttools); the outputs are committed.
"""
import os
from fontTools import subset
from fontTools.ttLib import TTFont

SOURCE = "/usr/share/fonts/truetype/liberation2/LiberationSans-{}.ttf"
OUT = os.path.join(os.path.dirname(__file__), "..", "src", "card", "fonts")
FAMILY = "Presently Sans"
# Basic Latin, Latin-1, Latin Extended-A, general punctuation (dashes, quotes, bullet, ellipsis), €, ™.
UNICODES = "U+0020-007E,U+00A0-017F,U+2010-2027,U+2030-203A,U+20AC,U+2122"

FALLBACK_SOURCE = "/usr/share/fonts/truetype/dejavu/DejaVuSans{}.ttf"
FALLBACK_FAMILY = "Presently Sans Fallback"
# Latin Extended-B and IPA, Greek, Cyrillic, Hebrew, Latin Extended Additional and Greek Extended,
# arrows, mathematical operators, box drawing and geometric shapes, miscellaneous symbols, dingbats.
FALLBACK_UNICODES = "U+0180-02AF,U+0370-03FF,U+0400-052F,U+0590-05FF,U+1E00-1FFF,U+2190-22FF,U+2500-25FF,U+2600-27BF"


def rename(font, family, weight, source):
    for record in list(font["name"].names):
        if record.nameID in (1, 16):
            record.string = family
        elif record.nameID == 4:
            record.string = f"{family} {weight}"
        elif record.nameID == 6:
            record.string = f"{family.replace(' ', '')}-{weight}"
        elif record.nameID == 3:
            record.string = f"{family} {weight} (subset of {source})"


def cut(source, unicodes, features):
    font = TTFont(source, recalcTimestamp=False)
    options = subset.Options()
    options.layout_features = features
    options.hinting = False
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=subset.parse_unicodes(unicodes))
    subsetter.subset(font)
    return font


for weight, suffix in (("Regular", ""), ("Bold", "-Bold")):
    font = cut(FALLBACK_SOURCE.format(suffix), FALLBACK_UNICODES, ["*"])
    rename(font, FALLBACK_FAMILY, weight, "DejaVu Sans")
    font.save(os.path.join(OUT, f"PresentlySansFallback-{weight}.ttf"))

for weight in ("Regular", "Bold"):
    font = cut(SOURCE.format(weight), UNICODES, ["kern"])
    rename(font, FAMILY, weight, "Liberation Sans")
    font.save(os.path.join(OUT, f"PresentlySans-{weight}.ttf"))
