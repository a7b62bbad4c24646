"""Arabic number formats of the club site: amounts with a decimal point and grouped thousands, as
payments in Egypt are written (1,500.00 EGP), where Django's Arabic formats write 1.500,00. Dates keep
Django's Arabic formats (month names in Arabic)."""

DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
