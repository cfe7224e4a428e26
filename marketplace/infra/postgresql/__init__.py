"""Django's PostgreSQL backend with a health check that costs no round trip on a quiet connection
(``base.DatabaseWrapper``); ``settings.DATABASES`` names it for every PostgreSQL database."""
