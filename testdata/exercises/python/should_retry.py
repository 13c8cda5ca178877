# The lesson's should-retry.js in Python (it needs no database).
def should_retry(outcome):
    if outcome == "network":
        return True
    return outcome in (409, 429) or outcome >= 500


for outcome in ["network", 201, 400, 409, 422, 429, 500, 503]:
    print(str(outcome).ljust(8), should_retry(outcome))
