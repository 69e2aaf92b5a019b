"""``python -m akchainsvc``: run the chain relay with settings from the environment."""

from __future__ import annotations

import asyncio
import logging
import sys

from pydantic import ValidationError

from akbus import RedisSettings
from akchain.errors import ChainError
from akchainsvc.service import ChainService
from akchainsvc.settings import ChainSettings


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for prefix, build in (("AP_", ChainSettings), ("REDIS_", RedisSettings)):
        try:
            build()
        except ValidationError as exc:
            for error in exc.errors():
                where = "_".join(str(p) for p in error["loc"]).upper()
                name = f"{prefix}{where}" if where else f"{prefix}* settings"
                logging.getLogger("akchainsvc").error("invalid setting %s: %s", name, error["msg"])
            return 2
    settings, redis = ChainSettings(), RedisSettings()
    try:
        asyncio.run(ChainService(settings, redis).run())
    except ChainError as exc:
        logging.getLogger("akchainsvc").error("%s", exc)
        return 1
    return 0


sys.exit(main())
