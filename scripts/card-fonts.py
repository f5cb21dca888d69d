#!/usr/bin/env python3
"""
Makes the card's fonts (src/http/card/fonts/) from Liberation Sans 2 (SIL OFL 1.1): Regular and Bold, cut
to the Latin, punctuation and symbols a card's text mostly is, renamed "Presently Sans" (the licence
reserves the name Liberation for the unmodified fonts). The .woff2 goes into every SVG card as @font-face
data; the .ttf is what the PNG renderer draws with and what the card measures text by.

Run by hand when the glyph set changes (Debian: apt-get install fonts-liberation2 python3-fonttools
python3-brotli); the outputs are committed.
"""
import os
from fontTools import subset
from fontTools.ttLib import TTFont

SOURCE = "/usr/share/fonts/truetype/liberation2/LiberationSans-{}.ttf"
OUT = os.path.join(os.path.dirname(__file__), "..", "src", "http", "card", "fonts")
FAMILY = "Presently Sans"
# Basic Latin, Latin-1, Latin Extended-A, general punctuation (dashes, quotes, bullet, ellipsis), €, ™.
UNICODES = "U+0020-007E,U+00A0-017F,U+2010-2027,U+2030-203A,U+20AC,U+2122"

for weight in ("Regular", "Bold"):
    font = TTFont(SOURCE.format(weight))
    options = subset.Options()
    options.layout_features = ["kern"]
    options.hinting = False
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=subset.parse_unicodes(UNICODES))
    subsetter.subset(font)
    names = font["name"]
    for record in list(names.names):
        if record.nameID in (1, 4, 16):
            record.string = FAMILY if record.nameID != 4 else f"{FAMILY} {weight}"
        elif record.nameID == 6:
            record.string = f"PresentlySans-{weight}"
        elif record.nameID == 3:
            record.string = f"Presently Sans {weight} (subset of Liberation Sans)"
    font.flavor = None
    font.save(os.path.join(OUT, f"PresentlySans-{weight}.ttf"))
    font.flavor = "woff2"
    font.save(os.path.join(OUT, f"PresentlySans-{weight}.woff2"))
