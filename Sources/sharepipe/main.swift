print("sharepipe")
