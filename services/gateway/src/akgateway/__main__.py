"""``python -m akgateway``: run the gateway (``--help`` lists every setting), or
``python -m akgateway cert generate|publish`` for the provider's certificate."""

import sys

if sys.argv[1:2] == ["cert"]:
    from akgateway.certcli import main as cert_main

    cert_main(sys.argv[2:])
else:
    from akgateway.service import SPEC
    from akservice import main

    main(SPEC)
