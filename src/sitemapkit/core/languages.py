"""ISO 639-1 language and ISO 3166-1 region codes, and `hreflang_problem`, which checks an hreflang value
against them (for the reader and the generator alike)."""

from __future__ import annotations

from typing import Final

__all__ = ["LANGUAGE_CODES", "REGION_CODES", "hreflang_problem"]

_LANGUAGES = """
    aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv
    dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii
    ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk
    ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc
    sd se sg sh si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz
    ve vi vo wa wo xh yi yo za zh zu"""
LANGUAGE_CODES: Final = frozenset(_LANGUAGES.split())
"""ISO 639-1 two-letter language codes (lowercase)."""

_REGIONS = """
    AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV
    BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET
    FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM
    IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD
    ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE
    PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST
    SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS
    YE YT ZA ZM ZW"""
REGION_CODES: Final = frozenset(_REGIONS.split())
"""ISO 3166-1 alpha-2 country codes (uppercase)."""

_REGION_HINTS: Final = {"UK": "GB"}


def hreflang_problem(code: str) -> str | None:
    """Say what is wrong with an hreflang value, or None if it is valid.

    Valid: `x-default`, an ISO 639-1 language (`en`), optionally followed by an ISO 15924 script
    (`zh-Hant`) and/or an ISO 3166-1 alpha-2 region (`en-GB`, `zh-Hant-TW`); case does not matter.

    >>> hreflang_problem("en-GB") is None
    True
    >>> hreflang_problem("en_GB")
    "'en_GB' uses '_'; separate language and region with '-' (en-GB)"
    """
    value = code.strip()
    if value.lower() == "x-default":
        return None
    if "_" in value:
        return f"{value!r} uses '_'; separate language and region with '-' ({value.replace('_', '-')})"
    parts = value.split("-")
    if parts[0].lower() not in LANGUAGE_CODES:
        return f"{parts[0]!r} is not an ISO 639-1 two-letter language code"
    rest = parts[1:]
    if rest and len(rest[0]) == 4 and rest[0].isalpha():
        rest = rest[1:]  # a script subtag such as Hant
    if len(rest) > 1:
        return f"{value!r} has too many parts; use language-REGION, for example en-GB"
    if rest:
        region = rest[0].upper()
        if region not in REGION_CODES:
            hint = f" (use {_REGION_HINTS[region]})" if region in _REGION_HINTS else ""
            return f"{rest[0]!r} is not an ISO 3166-1 alpha-2 region code{hint}"
    return None
