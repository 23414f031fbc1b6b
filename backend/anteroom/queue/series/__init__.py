"""The room's series: samples taken each interval and read back for the console and the API."""
